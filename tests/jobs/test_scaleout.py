#!/usr/bin/env python3
"""test_scaleout.py BUILD_DIR -- several collectors on one PostgreSQL (TAP).

docs/operations.md, "Outgrowing one collector". Real processes only: a
PostgreSQL cluster this test makes (initdb; the postgres user as root),
a streaming replica of it (pg_basebackup -R), two parity-collectors
sharing one key pair with --db on the primary, four parity-agent daemons
(two list collector 1 first, two collector 2 first), and the `parity`
client through either collector. Sockets: 127.0.0.1 and Unix sockets.

  - `hosts` through either collector shows all four agents online, with
    the collector holding each;
  - a job made through collector 1 runs on all four, JobStatus reaching
    collector 2 is seen through collector 1;
  - a cancel made through collector 1 reaches an agent held by
    collector 2 (its JobCancel stops the run);
  - collector 2 killed -9 in the middle of a job: its agents fail over
    to collector 1, the job ends with every host done, and every measured
    sample is stored once;
  - `parity verdicts` through a collector whose --query-db is the
    replica answers the same as the primary;
  - --data-dir with --db holds the lock: a second collector on the same
    data dir is refused;
  - a bisect started through collector 2 (8 commits, a 4-fold step at e05,
    on a1 and a3)
    is driven by one collector at a time: the one holding its lease is
    stopped in the middle, the other takes it over and names e05, and no
    step was made twice.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                        os.environ["PARITY_BUILD_DIR"])
AGENT = os.path.join(BUILD, "agent", "parity-agent")
COLLECTOR = os.path.join(BUILD, "collector", "parity-collector")
PARITY = os.path.join(BUILD, "collector", "client", "parity")
HEARTBEAT_MS = "200"

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, diag, bail, free_port, pg_bindir, tap  # noqa: E402,F401,E501

as_pg = pf.as_pg_owner   # PostgreSQL refuses to run as root


SUITE = """suite: scale
benchmarks:
  - name: steady
    runs: 30
    warmup: 1
    arms:
      - name: a
        subject: true
        command: [sleep, "0.05"]
      - name: b
        command: [sleep, "0.06"]
"""
# Long enough to kill a collector (or cancel) while a host runs it.
LONG_SUITE = """suite: long
benchmarks:
  - name: slowpoke
    runs: 60
    warmup: 0
    arms:
      - name: a
        subject: true
        command: [sleep, "0.05"]
      - name: b
        command: [sleep, "0.05"]
"""
AGENTS = ("a1", "a2", "a3", "a4")
# A bisect's suite: builds/eNN/tool sleeps 50 ms, 200 ms from e05 on.
# What this case checks is the lease, not the rule: under a full test run
# on 2 cores a 50 ms sleep spread by 7 % to 14 % between jobs, so with the
# default tolerance (4 %) a midpoint at the old level could be judged a
# loss against the good end and stay undecided. The collectors run with
# PARITY_TOLERANCE: a 4-fold step is far outside it, that spread well
# inside.
PARITY_TOLERANCE = "0.5"
COMMITS = ["e%02d" % i for i in range(8)]


class Cluster:
    """A primary and, later, its streaming replica."""

    def __init__(self, root):
        self.root = root
        self.sock = os.path.join(root, "sock")
        os.makedirs(self.sock)
        os.chmod(self.sock, 0o777)
        self.port = free_port()
        self.rport = free_port()
        self.primary = os.path.join(root, "primary")
        self.replica = os.path.join(root, "replica")
        self.bindir = pg_bindir()
        self.logs = os.path.join(root, "pglog")   # the server writes here
        os.makedirs(self.logs)
        if os.geteuid() == 0:
            shutil.chown(self.logs, "postgres")

    def tool(self, name, *args, timeout=120):
        r = subprocess.run(as_pg([os.path.join(self.bindir, name)] +
                                 list(args)), capture_output=True,
                           text=True, timeout=timeout, cwd="/")
        if r.returncode != 0:
            diag("%s: %s%s" % (name, r.stdout, r.stderr))
        return r.returncode == 0

    def start(self, datadir, port):
        return self.tool("pg_ctl", "-D", datadir, "-w", "-l",
                         os.path.join(self.logs, os.path.basename(datadir) +
                                      ".log"), "-o",
                         "-c listen_addresses='' -c unix_socket_directories="
                         "'%s' -p %d" % (self.sock, port), "start")

    def make_primary(self):
        os.makedirs(self.primary)
        if os.geteuid() == 0:
            shutil.chown(self.primary, "postgres")
        return (self.tool("initdb", "-D", self.primary, "-U", "parity",
                          "-A", "trust", "--no-sync") and
                self.start(self.primary, self.port) and
                self.tool("createdb", "-h", self.sock, "-p",
                          str(self.port), "-U", "parity", "parity"))

    def make_replica(self):
        os.makedirs(self.replica, mode=0o700)
        if os.geteuid() == 0:
            shutil.chown(self.replica, "postgres")
        # -c fast: the backup's checkpoint at once; a spread one waits up
        # to checkpoint_timeout (it once took over 120 s in CI).
        return (self.tool("pg_basebackup", "-h", self.sock, "-p",
                          str(self.port), "-U", "parity", "-D", self.replica,
                          "-R", "-X", "stream", "-c", "fast", "--no-sync") and
                self.start(self.replica, self.rport))

    def conninfo(self, replica=False):
        return "host=%s port=%d dbname=parity user=parity" % (
            self.sock, self.rport if replica else self.port)

    def psql(self, sql, replica=False):
        r = subprocess.run(
            [os.path.join(self.bindir, "psql"), "-X", "-A", "-t", "-q",
             "-v", "ON_ERROR_STOP=1", "-h", self.sock, "-p",
             str(self.rport if replica else self.port), "-U", "parity",
             "-d", "parity", "-c", sql],
            capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            diag("psql: " + r.stderr)
            return None
        return r.stdout.strip()

    def stop(self):
        for d in (self.replica, self.primary):
            if os.path.exists(os.path.join(d, "postmaster.pid")):
                self.tool("pg_ctl", "-D", d, "-m", "immediate", "-w",
                          "stop", timeout=60)


class World(pf.World):
    """Keys for the collectors and four agents, the scale and long suites,
    three collectors' ports, and the cluster they share (Cluster)."""

    def __init__(self):
        super().__init__("parity-scale-", PARITY, COLLECTOR)
        self.pg = Cluster(self.root)
        with open(os.path.join(self.suites, "scale.yaml"), "w") as f:
            f.write(SUITE)
        with open(os.path.join(self.suites, "long.yaml"), "w") as f:
            f.write(LONG_SUITE)
        builds = os.path.join(self.root, "builds")
        for i, c in enumerate(COMMITS):
            os.makedirs(os.path.join(builds, c))
            with open(os.path.join(builds, c, "tool"), "w") as f:
                f.write("#!/bin/sh\nexec sleep %s\n" %
                        ("0.2" if i >= 5 else "0.05"))
            os.chmod(os.path.join(builds, c, "tool"), 0o755)
        pf.bisect_suite(os.path.join(self.suites, "build.yaml"), builds, runs=8)
        self.commits = os.path.join(self.root, "commits.txt")
        with open(self.commits, "w") as f:
            f.write("".join(c + "\n" for c in COMMITS))
        for name in ("collector", "admin") + AGENTS:
            self.keygen(name, allow=name in AGENTS, admin=name == "admin")
        self.ports = {1: free_port(), 2: free_port(), 3: free_port()}
        self.collectors = {}
        self.agents = {}

    def endpoint(self, n):
        return "tcp://127.0.0.1:%d" % self.ports[n]

    def collector_args(self, n, extra=()):
        return [COLLECTOR, "--db", self.pg.conninfo(), "--data-dir",
                os.path.join(self.root, "c%d" % n), "--name", "c%d" % n,
                "--bind", self.endpoint(n), "--key",
                self.key("collector") + "_secret", "--allow", self.allow,
                "--admin", self.admin, "--heartbeat-ms", HEARTBEAT_MS,
                "--key-service", "off", "--parity", PARITY_TOLERANCE] + \
            list(extra)

    def start_collector(self, n, extra=()):
        log = open(os.path.join(self.root, "c%d.log" % n), "ab")
        p = subprocess.Popen(self.collector_args(n, extra), stdout=log,
                             stderr=log)
        self.collectors[n] = p
        self.wait_tcp(p, self.ports[n])

    def start_agent(self, name, order):
        home = os.path.join(self.root, "agent-" + name)
        os.makedirs(home, exist_ok=True)
        log = open(os.path.join(home, "agent.log"), "ab")
        self.agents[name] = subprocess.Popen(
            [AGENT, "--collector", ",".join(self.endpoint(n) for n in order),
             "--collector-key", self.key("collector"), "--key",
             self.key(name), "--suites", self.suites, "--spool",
             os.path.join(home, "spool"), "--name", name, "--heartbeat-ms",
             HEARTBEAT_MS], stdout=log, stderr=log, cwd=home)

    def parity(self, n, *args, timeout=60):
        e = dict(os.environ)
        e.update({"PARITY_COLLECTOR": self.endpoint(n),
                  "PARITY_COLLECTOR_KEY": self.key("collector"),
                  "PARITY_KEY": self.key("admin"), "HOME": self.root})
        e.pop("XDG_CONFIG_HOME", None)
        return subprocess.run([PARITY] + list(args), capture_output=True,
                              text=True, timeout=timeout, env=e)

    def pjson(self, n, *args):
        r = self.parity(n, *args)
        try:
            return json.loads(r.stdout)
        except ValueError:
            diag("parity %s via c%d: rc %d\n%s%s" % (
                " ".join(args), n, r.returncode, r.stdout, r.stderr))
            return None

    def hosts(self, n):
        h = self.pjson(n, "hosts", "--json") or {}
        return {x["name"]: x for x in h.get("hosts", [])}

    def wait_hosts(self, n, pred, timeout=30):
        end = time.time() + timeout
        hs = {}
        while time.time() < end:
            hs = self.hosts(n)
            if all(a in hs and pred(hs[a]) for a in AGENTS):
                return hs
            time.sleep(0.2)
        diag("hosts via c%d: %s" % (n, {a: (h.get("online"),
                                            h.get("collector"))
                                        for a, h in hs.items()}))
        return None

    def job_hosts(self, n, job):
        v = self.pjson(n, "verdicts", job, "--json") or {}
        return v, {h["host"]: h for h in v.get("hosts", [])}

    def wait_job(self, n, job, timeout):
        end = time.time() + timeout
        v = None
        while time.time() < end:
            v, _ = self.job_hosts(n, job)
            if v and v.get("state") != "active":
                return v
            time.sleep(0.3)
        return v

    def close(self):
        pf.stop_all(self.agents.values())
        for n, p in self.collectors.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    rc = p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    rc = p.wait()
                ok(rc == 0, "collector %d exits 0 on SIGTERM (%d)" % (n, rc))
        self.pg.stop()
        bad = self.sanitizer_logs()
        ok(not bad, "no sanitizer report in the logs %s" % bad)
        self.remove(tap.n_failed and os.environ.get("PARITY_KEEP"))


def run_job(w, n, suite):
    r = w.parity(n, "run", suite, "--json")
    try:
        return json.loads(r.stdout)["job"]
    except (ValueError, KeyError):
        diag("run %s via c%d: rc %d %s%s" % (suite, n, r.returncode,
                                           r.stdout, r.stderr))
        return None


def wait_running_on(w, job, names, timeout=90):
    """The name of a host of names whose row of job is running, once its
    run has stored samples (it is in the middle, not just offered)."""
    end = time.time() + timeout
    while time.time() < end:
        _, hs = w.job_hosts(1, job)
        for name in names:
            if hs.get(name, {}).get("state") != "running":
                continue
            n = w.pg.psql(
                "SELECT count(*) FROM samples s JOIN runs r ON r.id = s.run "
                "JOIN hosts h ON h.id = r.host_id WHERE r.job_id = '%s' AND "
                "h.name = '%s' AND s.kind = 0" % (job, name))
            if n and int(n) >= 4:
                return name
        time.sleep(0.1)
    return None


def case_fleet(w):
    hs = w.wait_hosts(1, lambda h: h.get("online"))
    ok(hs is not None, "hosts through collector 1: all four agents online, "
       "those of collector 2 too")
    held = {a: (hs or {}).get(a, {}).get("collector") for a in AGENTS}
    ok(held == {"a1": "c1", "a2": "c1", "a3": "c2", "a4": "c2"},
       "each host names the collector holding it (%s)" % held)
    ok(w.wait_hosts(2, lambda h: h.get("online")) is not None,
       "hosts through collector 2: all four online")

    job = run_job(w, 1, "scale")
    ok(job is not None, "a job made through collector 1")
    v = w.wait_job(2, job, 120) if job else None
    states = {h["host"]: h.get("state") for h in (v or {}).get("hosts", [])}
    ok(v and v.get("state") == "ended" and
       states == {a: "done" for a in AGENTS},
       "it ran on all four agents, seen through collector 2 (%s)" % states)
    _, hs1 = w.job_hosts(1, job) if job else (None, {})
    ok(all(hs1.get(a, {}).get("state") == "done" for a in ("a3", "a4")),
       "collector 2's hosts' JobStatus is seen through collector 1")
    n_verdicts = w.pg.psql(
        "SELECT count(DISTINCT r.host_id) FROM verdicts v JOIN runs r ON "
        "r.id = v.run JOIN jobs j ON j.job_uuid = r.job_id WHERE "
        "j.job_uuid = '%s'" % job) if job else None
    ok(n_verdicts == "4", "a verdict stored for each of the four hosts (%s)"
       % n_verdicts)


def case_cancel(w):
    job = run_job(w, 1, "long")
    host = wait_running_on(w, job, ("a3", "a4")) if job else None
    ok(host is not None, "the long job runs on a host of collector 2 (%s)"
       % host)
    r = w.parity(1, "cancel", job) if host else None
    ok(r is not None and r.returncode == 0,
       "cancelled through collector 1: %s" % (r.stdout.strip() if r else ""))
    # The agent stops its run: the run ends cancelled well before its
    # 60 rounds (6 s) would, and the agent takes the next job.
    end = time.time() + 20
    status = None
    while host and time.time() < end:
        status = w.pg.psql(
            "SELECT COALESCE(r.status, 'running') FROM runs r JOIN hosts h "
            "ON h.id = r.host_id WHERE r.job_id = '%s' AND h.name = '%s'"
            % (job, host))
        if status and status != "running":
            break
        time.sleep(0.2)
    log = open(os.path.join(w.root, "agent-" + host, "agent.log")).read() \
        if host else ""
    ok(status is not None and status != "running" and "cancel" in log,
       "the agent on collector 2 got the JobCancel and stopped the run "
       "(status %s)" % status)
    c2 = open(os.path.join(w.root, "c2.log")).read()
    ok("cancelled through another collector" in c2,
       "collector 2 logged the cancel it heard of through NOTIFY")


def case_failover(w):
    job = run_job(w, 1, "scale")
    host = wait_running_on(w, job, ("a3", "a4")) if job else None
    ok(host is not None, "a job runs on a host of collector 2 (%s)" % host)
    w.collectors[2].send_signal(signal.SIGKILL)
    w.collectors[2].wait()
    del w.collectors[2]
    t0 = time.time()
    hs = w.wait_hosts(1, lambda h: h.get("online") and
                      h.get("collector") == "c1", timeout=60)
    ok(hs is not None, "collector 2 killed -9: its agents fail over to "
       "collector 1 (%.1f s)" % (time.time() - t0))
    v = w.wait_job(1, job, 180)
    states = {h["host"]: h.get("state") for h in (v or {}).get("hosts", [])}
    ok(v and v.get("state") == "ended" and
       states == {a: "done" for a in AGENTS},
       "the job ends with every host done (%s)" % states)
    # Every measured sample once: per run, 30 rounds x 2 arms, no
    # (round, arm) twice, whichever collector stored it.
    dup = w.pg.psql(
        "SELECT count(*) FROM (SELECT s.run, s.round, s.arm FROM samples s "
        "JOIN runs r ON r.id = s.run WHERE r.job_id = '%s' AND s.kind = 0 "
        "GROUP BY 1, 2, 3 HAVING count(*) > 1) d" % job)
    per_run = w.pg.psql(
        "SELECT string_agg(c::text, ',') FROM (SELECT count(*) c FROM "
        "samples s JOIN runs r ON r.id = s.run WHERE r.job_id = '%s' AND "
        "s.kind = 0 GROUP BY s.run) x" % job)
    ok(dup == "0" and per_run == "60,60,60,60",
       "every measured sample stored once (duplicates %s, per run %s)"
       % (dup, per_run))
    return job


def case_replica(w, job):
    ok(w.pg.make_replica(), "a streaming replica (pg_basebackup -R) runs")
    # Caught up: the job's verdicts are on the replica.
    end = time.time() + 30
    got = None
    while time.time() < end:
        got = w.pg.psql("SELECT count(*) FROM verdicts v JOIN runs r ON "
                        "r.id = v.run WHERE r.job_id = '%s'" % job,
                        replica=True)
        if got and got != "0":
            break
        time.sleep(0.3)
    ok(got not in (None, "0"), "the replica has the job's verdicts (%s)"
       % got)
    w.start_collector(3, ["--query-db", w.pg.conninfo(replica=True)])
    a = w.parity(1, "verdicts", job, "--json")
    b = w.parity(3, "verdicts", job, "--json")
    ok(b.returncode == 0 and b.stdout == a.stdout,
       "parity verdicts through a --query-db collector answers from the "
       "replica, the same as the primary's")
    # It is the replica that answers: stopped, the read commands say so.
    w.pg.tool("pg_ctl", "-D", w.pg.replica, "-m", "fast", "-w", "stop")
    r = w.parity(3, "verdicts", job)
    ok(r.returncode != 0 and "database unavailable" in r.stderr,
       "with the replica stopped, verdicts through it: %s" %
       r.stderr.strip()[:160])
    r = w.parity(3, "jobs")
    ok(r.returncode != 0, "and jobs too (rc %d)" % r.returncode)


def case_bisect(w):
    r = w.parity(2, "bisect", "start", "--suite", "build", "--bench", "tool",
                 "--good", "e00", "--bad", "e07", "--commits", w.commits,
                 "--hosts", "a1,a3", "--json")
    try:
        bid = json.loads(r.stdout)["bisect"]
    except (ValueError, KeyError):
        return ok(False, "bisect start through collector 2: %s" % r.stderr)

    def holder():
        # Jobs, not steps: one job measures each point of its group.
        got = w.pg.psql("SELECT lease_owner, (SELECT count(DISTINCT "
                        "job_uuid) FROM bisect_steps WHERE bisect = b.id) "
                        "FROM bisects b WHERE id = %d" % bid) or "|0"
        owner, _, n = got.partition("|")
        return owner, int(n or 0)
    ok(pf.wait_until(lambda: holder()[1] >= 2, 120, every=0.1),
       "the bisect made through collector 2 measures its ends and a "
       "midpoint (%s)" % (holder(),))
    owner, made = holder()
    n = int(owner[1:]) if owner in ("c1", "c2") else 0
    ok(n in (1, 2), "one collector holds its lease (%s)" % owner)
    if n not in (1, 2):
        return
    # Stopped, the holder gives the lease back; the other carries on.
    w.collectors[n].send_signal(signal.SIGTERM)
    w.collectors[n].wait(timeout=60)
    other = 3 - n
    ok(pf.wait_until(lambda: holder()[0] == "c%d" % other, 30),
       "collector %d stopped: collector %d takes the bisect over (%s)" % (
           n, other, holder()[0]))
    w.start_collector(n)
    end = time.time() + 240
    b = {}
    while time.time() < end:
        b = w.pjson(other, "bisect", "status", str(bid), "--json") or {}
        if b.get("state") not in ("queued", "running"):
            break
        time.sleep(1)
    cs = [c["commit"] for c in (b.get("result") or {}).get("culprits", [])]
    ok(b.get("state") == "done" and cs == ["e05"],
       "the bisect ends done with e05 (%s %s %s)" % (
           b.get("state"), cs, b.get("reason")))
    twice = w.pg.psql("SELECT count(*) FROM (SELECT 1 FROM bisect_steps "
                      "WHERE bisect = %d GROUP BY point, mid, try, rerun "
                      "HAVING count(*) > 1) d" % bid)
    logs = {}
    for k in (1, 2):
        with open(os.path.join(w.root, "c%d.log" % k)) as f:
            logs[k] = f.read().count("event=bisect_step bisect=%d " % bid)
    jobs = len({s["job"] for s in b.get("steps", [])})
    ok(twice == "0" and logs[n] >= made and logs[other] >= 1 and
       logs[1] + logs[2] == jobs,
       "no step made twice; collector %d made %d jobs, collector %d %d, "
       "of %d" % (n, logs[n], other, logs[other], jobs))


def case_lock(w):
    p = subprocess.run(w.collector_args(1), capture_output=True, text=True,
                       timeout=30)
    ok(p.returncode == 1 and "is in use by another parity-collector" in
       p.stderr, "a second collector on collector 1's --data-dir (with "
       "--db) is refused: %s" % p.stderr.strip()[-160:])


def main():
    pf.need(AGENT, COLLECTOR, PARITY)
    if not os.path.exists(os.path.join(pg_bindir(), "pg_basebackup")):
        print("1..0 # SKIP no PostgreSQL server binaries", flush=True)
        return
    w = World()
    try:
        if not w.pg.make_primary():
            bail("could not make the PostgreSQL cluster")
        w.start_collector(1)
        w.start_collector(2)
        w.start_agent("a1", (1, 2))
        w.start_agent("a2", (1, 2))
        w.start_agent("a3", (2, 1))
        w.start_agent("a4", (2, 1))
        case_fleet(w)
        case_cancel(w)
        case_lock(w)
        case_bisect(w)
        job = case_failover(w)
        if job:
            case_replica(w, job)
    finally:
        w.close()
    pf.finish()


if __name__ == "__main__":
    main()
