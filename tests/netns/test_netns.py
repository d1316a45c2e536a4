#!/usr/bin/env python3
"""test_netns.py -- several agent hosts against one collector over network
namespaces (TAP).

The project's rule: a multi-host test uses network namespaces on this
machine and only loopback or those namespaces' own addresses. This test
builds a private topology, named after its pid so that two runs never
meet:

    ptyPID-c   the collector's host: bridge br0, 10.231.S.1/24, lo
    ptyPID-a1  \
    ptyPID-a2   |  agent hosts: eth0 10.231.S.(10+i)/24 (a veth whose
    ptyPID-a3   |  other end, v<i>, is a port of br0 in ptyPID-c), lo;
    ptyPID-x    |  no default route, so nothing can leave them
    ptyPID-d1   |
    ptyPID-d2  /

The veth pairs are created inside the namespaces (`ip -n NS link add ...
peer ... netns NS2`), so nothing appears in the machine's own namespace.
S is 10.231.0.0/16's third octet chosen from the pid; those addresses
exist only inside these namespaces.

1. run mode: parity-agent run in a1, a2, a3 (each its own key, --name and
   calibration; a3 runs more rounds, so its floor comes from more
   calibration samples) streaming to parity-collector bound to
   tcp://10.231.S.1:PORT in ptyPID-c, its private PostgreSQL in a temp
   dir. Per host: every sample stored (count and wall_us equal to its own
   --out results file), its own verdict, the floor it calibrated itself,
   and the stored verdict equal to `parity verdict --batch` recomputed
   from that host's stored samples and stored floor. An agent in x whose
   key is not on the collector's allow-list stores nothing.
2. daemon mode: parity-agent daemons in d1 and d2 show as hosts after
   Hello; a job runs on both; d1's link goes down mid-job until the
   collector marks it offline, then up: it comes back online, its run is
   stored complete with every sample, the job ends done on both.

Always cleans up (processes, PostgreSQL, namespaces), also on failure,
SIGTERM or the overall deadline. Skips (TAP `1..0 # SKIP`) when not root
or when `ip netns` cannot create a namespace.

Environment (meson sets these): PARITY_AGENT, PARITY_COLLECTOR,
PARITY_CLIENT, PARITY_TESTPROG; or PARITY_BUILD_DIR / argv[1], the build
dir. PARITY_PG_BINDIR, PARITY_KEEP=1 (keep the temp dir after a failure).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

BUILD = os.environ.get("PARITY_BUILD_DIR") or \
    (sys.argv[1] if len(sys.argv) > 1 else "")


def s_prog(env, *rel):
    return os.environ.get(env) or os.path.join(BUILD, *rel)


AGENT = s_prog("PARITY_AGENT", "agent", "parity-agent")
COLLECTOR = s_prog("PARITY_COLLECTOR", "collector", "parity-collector")
PARITY = s_prog("PARITY_CLIENT", "collector", "client", "parity")
TESTPROG = s_prog("PARITY_TESTPROG", "tests", "helpers", "parity-testprog")

DEADLINE_S = 85        # the whole test; meson's timeout is 180
STEP_S = 30            # any single command
HEARTBEAT_MS = 500     # both sides: offline after 5 silent beats, 2.5 s
PORT = 5555            # free by construction: the namespace is new
RUN_HOSTS = [("a1", 20), ("a2", 20), ("a3", 150)]   # (host, --runs)
DAEMON_HOSTS = ["d1", "d2"]
INTRUDER = "x"

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, diag, pg_bindir, tap  # noqa: E402


class Deadline(Exception):
    pass


def skip_all(reason):
    print("1..0 # SKIP " + reason, flush=True)
    sys.exit(0)


def sh(cmd, timeout=STEP_S, check=True, **kw):
    """Run cmd (a list) to completion; with check, a failure is fatal."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                                r.stderr.strip()))
    return r


def quantile(sorted_x, p):
    """vd_quantile_sorted: linear interpolation between closest ranks."""
    n = len(sorted_x)
    if n == 1:
        return sorted_x[0]
    h = (n - 1) * p
    lo = int(h)
    if lo >= n - 1:
        return sorted_x[n - 1]
    return sorted_x[lo] + (h - lo) * (sorted_x[lo + 1] - sorted_x[lo])


def floor_of(walls):
    s = sorted(walls)
    return quantile(s, 0.9) - quantile(s, 0.1)


def same(a, b):
    """Equal doubles, allowing for the last bits of a text round trip."""
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1e-300)


def public_key(cert):
    """The Z85 public key of a zcert public certificate file."""
    with open(cert) as f:
        m = re.search(r'public-key\s*=\s*"([^"]{40})"', f.read())
    return m.group(1) if m else None


class Topology:
    """The namespaces, their links and addresses; removed by close()."""

    def __init__(self):
        self.prefix = "pty%d" % os.getpid()
        self.subnet = "10.231.%d" % (os.getpid() % 250 + 1)
        self.collector_ns = self.prefix + "-c"
        self.collector_ip = self.subnet + ".1"
        self.ns = {}      # host -> namespace
        self.ip = {}      # host -> address
        self.port = {}    # host -> its port on br0 (in the collector ns)
        self.created = []

    def build(self, hosts):
        """Make the namespaces; each is recorded before it is touched, so
        close() removes whatever a failure half-way left."""
        self._add(self.collector_ns)
        c = self.collector_ns
        sh(["ip", "-n", c, "link", "set", "lo", "up"])
        sh(["ip", "-n", c, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", c, "addr", "add", self.collector_ip + "/24",
            "dev", "br0"])
        sh(["ip", "-n", c, "link", "set", "br0", "up"])
        for i, host in enumerate(hosts):
            ns = "%s-%s" % (self.prefix, host)
            self._add(ns)
            port = "v%d" % i
            sh(["ip", "-n", c, "link", "add", port, "type", "veth", "peer",
                "name", "eth0", "netns", ns])
            sh(["ip", "-n", c, "link", "set", port, "master", "br0", "up"])
            ip = "%s.%d" % (self.subnet, 10 + i)
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            sh(["ip", "-n", ns, "addr", "add", ip + "/24", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            self.ns[host], self.ip[host], self.port[host] = ns, ip, port

    def _add(self, ns):
        sh(["ip", "netns", "add", ns])
        self.created.append(ns)

    def exec(self, host, cmd):
        ns = self.collector_ns if host == "c" else self.ns[host]
        return ["ip", "netns", "exec", ns] + list(cmd)

    def routes(self, host):
        ns = self.collector_ns if host == "c" else self.ns[host]
        return sh(["ip", "-n", ns, "-4", "route", "show"]).stdout.strip()

    def link(self, host, state):
        sh(["ip", "-n", self.ns[host], "link", "set", "eth0", state])

    def close(self):
        for ns in reversed(self.created):
            # Anything still alive in our namespaces was started by us.
            r = sh(["ip", "netns", "pids", ns], check=False, timeout=10)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            r = sh(["ip", "netns", "del", ns], check=False, timeout=10)
            if r.returncode != 0:
                diag("ip netns del %s: %s" % (ns, r.stderr.strip()))
        self.created = []


class World(pf.World):
    """Keys (every host's on the allow-list but the intruder's), suites,
    and the collector in the collector's namespace."""

    def __init__(self, topo):
        super().__init__("parity-netns-", PARITY, COLLECTOR)
        self.topo = topo
        self.endpoint = "tcp://%s:%d" % (topo.collector_ip, PORT)
        self.procs = []
        for name in ["collector", "admin", INTRUDER] + \
                [h for h, _ in RUN_HOSTS] + DAEMON_HOSTS:
            self.keygen(name, allow=name not in ("collector", "admin",
                                                 INTRUDER),
                        admin=name == "admin")

    def spawn(self, host, cmd, log):
        f = open(os.path.join(self.root, log), "ab")
        p = subprocess.Popen(self.topo.exec(host, cmd), stdout=f,
                             stderr=subprocess.STDOUT)
        f.close()
        self.procs.append(p)
        return p

    def log(self, name):
        try:
            with open(os.path.join(self.root, name), "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def start_collector(self):
        # Enrollment off: the intruder's key fails the handshake, as
        # phase_run_mode checks (tests/daemon/test_enroll.py has it on).
        self.collector = self.spawn("c", self.collector_cmd(
            self.endpoint, HEARTBEAT_MS, "--enroll", "off"),
            "collector.log")
        # Ready once bound (after the cluster is up and migrated).
        end = time.time() + 45
        while time.time() < end:
            if self.collector.poll() is not None:
                raise RuntimeError("parity-collector exited %d:\n%s" % (
                    self.collector.returncode,
                    self.log("collector.log")[-2000:]))
            if "event=listening" in self.log("collector.log"):
                return
            time.sleep(0.1)
        raise RuntimeError("parity-collector not listening after 45 s")

    def rows(self, sql):
        text = self.psql(sql)
        return [line.split("|") for line in text.splitlines()] \
            if text else []

    def client(self, *args):
        """`parity` with the admin key, run in the collector's namespace."""
        env = dict(os.environ, HOME=self.root)
        env.pop("XDG_CONFIG_HOME", None)
        return sh(self.topo.exec("c", [
            PARITY] + list(args) + [
            "--collector", self.endpoint, "--collector-key",
            self.key("collector"), "--key", self.key("admin") + "_secret"]),
            check=False, env=env)

    def spooled(self, host):
        d = os.path.join(self.root, "spool-" + host)
        return sum(1 for n in os.listdir(d) if n.endswith(".msg")) \
            if os.path.isdir(d) else 0

    def close(self, keep):
        for p in reversed(self.procs):
            self.stop(p, wait=10)
        # A collector that died leaves its server running.
        if os.path.exists(os.path.join(self.data, "pg", "postmaster.pid")):
            cmd = [os.path.join(pg_bindir(), "pg_ctl"), "-D",
                   os.path.join(self.data, "pg"), "stop", "-m", "immediate",
                   "-w"]
            sh(pf.as_pg_owner(cmd), check=False)
        self.remove(keep)


def write_suite(w, name, runs, quick_us, slow_us):
    return pf.write_suite(
        os.path.join(w.suites, name + ".yaml"), name,
        [{"name": "sleepers", "runs": runs, "warmup": 2, "arms": [
            {"name": "quick", "command": [TESTPROG, "sleep", str(quick_us)]},
            {"name": "slower",
             "command": [TESTPROG, "sleep", str(slow_us)]}]}])


def agent_run(w, host, suite, runs, ack_timeout):
    return w.spawn(host, [
        AGENT, "run", suite, "--runs", str(runs),
        "--out", os.path.join(w.root, "results-%s.json" % host),
        "--collector", w.endpoint, "--collector-key", w.key("collector"),
        "--key", w.key(host) + "_secret",
        "--spool", os.path.join(w.root, "spool-" + host),
        "--name", "netns-" + host, "--heartbeat-ms", str(HEARTBEAT_MS),
        "--ack-timeout", str(ack_timeout)], "agent-%s.log" % host)


def host_id(w, host):
    text = w.psql("SELECT id FROM hosts WHERE public_key = '%s'"
                  % public_key(w.key(host)))
    return int(text) if text else None


def check_run_host(w, host, results):
    """Samples, verdict and floor of one run-mode host. Returns the batch
    line to recompute its verdict, and its stored verdict row."""
    hid = host_id(w, host)
    if not ok(hid is not None, "%s: stored as a host under its own key"
              % host):
        return None, None
    ok(w.psql("SELECT name FROM hosts WHERE id = %d" % hid)
       == "netns-" + host, "%s: the host's name is its --name" % host)
    walls = sorted(s["wall_us"] for b in results["benchmarks"]
                   for s in b["samples"])
    stored = w.psql("SELECT s.wall_us FROM samples s JOIN runs r ON "
                    "r.id = s.run WHERE r.host_id = %d ORDER BY s.wall_us"
                    % hid)
    swalls = [float(x) for x in stored.split()] if stored else []
    ok(len(walls) > 0 and len(swalls) == len(walls),
       "%s: stored %d samples, its results file has %d"
       % (host, len(swalls), len(walls)))
    ok(swalls == walls, "%s: stored wall_us equal the results file's "
       "(sum %.3f vs %.3f)" % (host, sum(swalls), sum(walls)))
    distinct = w.psql("SELECT count(DISTINCT (s.run, s.batch_seq, s.idx)) "
                      "FROM samples s JOIN runs r ON r.id = s.run WHERE "
                      "r.host_id = %d" % hid)
    ok(distinct == str(len(swalls)), "%s: no sample stored twice" % host)
    ok(w.psql("SELECT string_agg(status, ',') FROM runs WHERE host_id = %d"
              % hid) == "complete", "%s: its one run is stored complete"
       % host)

    v = w.rows("SELECT v.run, v.subject_arm, v.other_arm, v.outcome, "
               "v.ratio, v.best_ratio, v.tolerance, v.noise, "
               "v.best_tolerance, v.diagnostics, v.extra_runs, v.floor_us, "
               "v.floor_is_default, v.floor_samples, v.parity, r.ended_at_us "
               "FROM verdicts v JOIN runs r ON r.id = v.run "
               "WHERE v.host_id = %d AND r.host_id = %d" % (hid, hid))
    if not ok(len(v) == 1, "%s: one stored verdict of its own (%d)"
              % (host, len(v))):
        return None, None
    v = v[0]
    run, subj, other = v[0], int(v[1]), int(v[2])
    floor_us, floor_samples = float(v[11]), int(v[13])

    # The floor: what this host calibrated, and nobody else.
    rf = results["floor"]
    ok(v[12] == "f" and same(floor_us, rf["floor_us"]) and
       floor_samples == rf["calibration_samples"],
       "%s: stored floor %.3f us from %d calibration samples is the one the "
       "agent calibrated (%.3f us from %d)" % (host, floor_us,
                                               floor_samples, rf["floor_us"],
                                               rf["calibration_samples"]))
    cal = w.psql(
        "SELECT wall_us FROM (SELECT wall_us, taken_at_us AS t FROM "
        "calibration_samples WHERE host_id = %d AND taken_at_us <= %s "
        "UNION ALL SELECT s.wall_us, s.start_unix_us FROM samples s JOIN "
        "runs r ON r.id = s.run WHERE r.host_id = %d AND s.kind = 2 AND "
        "s.start_unix_us <= %s) c" % (hid, v[15], hid, v[15]))
    own = [float(x) for x in cal.split()] if cal else []
    ok(len(own) == floor_samples and own and
       same(floor_of(own), floor_us),
       "%s: the stored floor is q90-q10 of this host's own %d stored "
       "calibration samples (%.3f us)" % (host, len(own),
                                          floor_of(own) if own else -1))

    # The agent's own verdict agrees with the stored one.
    local = results["benchmarks"][0]["verdict"]
    local = next(iter(local.values())) if local else {}
    ok(local.get("outcome") == v[3] and
       same(float(local.get("ratio", "nan")), float(v[4])),
       "%s: stored verdict %s ratio %s is the agent's own (%s %s)"
       % (host, v[3], v[4], local.get("outcome"), local.get("ratio")))

    def arm(i):
        text = w.psql("SELECT wall_us FROM samples WHERE run = %s AND "
                      "kind = 0 AND arm = %d ORDER BY batch_seq, idx"
                      % (run, i))
        return [float(x) for x in text.split()] if text else []
    line = json.dumps({"a": arm(subj), "b": arm(other), "floor_us": floor_us,
                       "parity": float(v[14])})
    return line, v


def compare_verdict(w, host, v, got):
    """The stored row v and its verdict_json against `parity verdict
    --batch`'s answer got: every field of the answer, the diagnostics by
    name (the row holds their bit mask, the JSON their names)."""
    names = ["outcome", "ratio", "best_ratio", "tolerance", "noise",
             "best_tolerance", "diagnostics", "extra_runs"]
    row = dict(zip(names, v[3:11]))
    text = w.psql("SELECT verdict_json FROM verdicts WHERE run = %s AND "
                  "other_arm = %s" % (v[0], v[2]))
    try:
        stored = json.loads(text)
    except (TypeError, ValueError):
        stored = {}
    bad = []
    if not got:
        bad.append("no answer")
    for name, want in got.items():
        have = stored.get(name)
        if isinstance(want, (int, float)) and isinstance(have, (int, float)):
            if not same(float(have), float(want)):
                bad.append("%s %r vs %r" % (name, have, want))
        elif have != want:
            bad.append("%s %r vs %r" % (name, have, want))
    for name in names:
        if name == "diagnostics":
            continue
        want = got.get(name)
        if name == "outcome":
            if row[name] != want:
                bad.append("column outcome %s vs %s" % (row[name], want))
        elif want is None or not same(float(row[name]), float(want)):
            bad.append("column %s %s vs %s" % (name, row[name], want))
    ok(not bad, "%s: stored verdict (%s, ratio %s) equals parity verdict "
       "--batch on its stored samples and floor%s" % (
           host, row["outcome"], row["ratio"],
           ": " + "; ".join(bad) if bad else ""))


def phase_run_mode(w):
    suite = write_suite(w, "netns-run", 20, 1500, 2500)
    agents = {h: agent_run(w, h, suite, runs, 30) for h, runs in RUN_HOSTS}
    intruder = agent_run(w, INTRUDER, suite, 5, 4)
    for h, p in agents.items():
        try:
            rc = p.wait(timeout=STEP_S + 10)
        except subprocess.TimeoutExpired:
            rc = w.stop(p, signal.SIGKILL)
        ok(rc == 0, "%s: parity-agent run in %s exits 0 after every ack (%s)"
           % (h, w.topo.ns[h], rc))
        if rc != 0:
            diag(w.log("agent-%s.log" % h)[-1500:])
        ok(w.spooled(h) == 0, "%s: its spool is empty" % h)
    try:
        rc = intruder.wait(timeout=STEP_S)
    except subprocess.TimeoutExpired:
        rc = w.stop(intruder, signal.SIGKILL)
    ok(rc == 3, "intruder: parity-agent run with a key not on the allow-list "
       "exits 3, nothing acked (%s)" % rc)
    ok(w.spooled(INTRUDER) > 0, "intruder: its messages stay in its spool "
       "(%d)" % w.spooled(INTRUDER))

    lines, verdicts, floors = [], {}, {}
    for h, _ in RUN_HOSTS:
        path = os.path.join(w.root, "results-%s.json" % h)
        try:
            with open(path) as f:
                results = json.load(f)
        except (OSError, ValueError) as e:
            ok(False, "%s: results file %s: %s" % (h, path, e))
            continue
        line, v = check_run_host(w, h, results)
        if line:
            lines.append((h, line))
            verdicts[h] = v
            floors[h] = (float(v[11]), int(v[13]))

    if lines:
        r = sh([PARITY, "verdict", "--batch"], check=False,
               input="".join(l + "\n" for _, l in lines))
        out = r.stdout.splitlines()
        ok(r.returncode == 0 and len(out) == len(lines),
           "parity verdict --batch answers one line per host (%d of %d)"
           % (len(out), len(lines)))
        for (h, _), text in zip(lines, out):
            try:
                got = json.loads(text)
            except ValueError:
                got = {}
            compare_verdict(w, h, verdicts[h], got)

    # Each host its own floor: a3 calibrated over more rounds than a1, and
    # no host's floor is the floor of everybody's calibration pooled.
    if "a1" in floors and "a3" in floors:
        ok(floors["a3"][1] > floors["a1"][1],
           "a3's floor comes from its own %d calibration samples, a1's from "
           "its %d" % (floors["a3"][1], floors["a1"][1]))
    pooled = w.psql("SELECT wall_us FROM calibration_samples UNION ALL "
                    "SELECT wall_us FROM samples WHERE kind = 2")
    pooled = [float(x) for x in pooled.split()] if pooled else []
    if pooled and floors:
        pf = floor_of(pooled)
        ok(all(not same(f, pf) for f, _ in floors.values()) and
           len(set(f for f, _ in floors.values())) == len(floors),
           "the hosts' floors differ from each other and from the pooled "
           "floor %.3f us (%s)" % (pf, ", ".join(
               "%s %.3f" % (h, f[0]) for h, f in sorted(floors.items()))))

    ok(w.psql("SELECT count(*) FROM verdicts v JOIN runs r ON r.id = v.run "
              "WHERE v.host_id <> r.host_id") == "0" and
       w.psql("SELECT count(DISTINCT host_id) FROM verdicts")
       == str(len(RUN_HOSTS)), "every stored verdict is its run's host's, "
       "one set per host")

    ik = public_key(w.key(INTRUDER))
    ok(w.psql("SELECT (SELECT count(*) FROM hosts WHERE public_key = '%s' OR "
              "name = 'netns-%s') + (SELECT count(*) FROM runs r JOIN hosts "
              "h ON h.id = r.host_id WHERE h.name = 'netns-%s')"
              % (ik, INTRUDER, INTRUDER)) == "0",
       "intruder: no host, no run stored for it")
    ok(w.psql("SELECT count(*) FROM hosts") == str(len(RUN_HOSTS)),
       "only the %d allowed hosts are stored" % len(RUN_HOSTS))
    ok("event=auth_denied" in w.log("collector.log") or
       "event=handshake_failed" in w.log("collector.log"),
       "the collector logged the refused handshake")


def phase_daemon(w):
    # Few long rounds: at least 3 s of sleeping, so the run is still
    # measuring when the link goes down, and little spawn overhead, so a
    # loaded machine (or an ASan build) does not stretch it much.
    write_suite(w, "netns-job", 60, 20000, 30000)
    daemons = {}
    for h in DAEMON_HOSTS:
        daemons[h] = w.spawn(h, [
            AGENT, "--collector", w.endpoint, "--collector-key",
            w.key("collector"), "--key", w.key(h), "--suites", w.suites,
            "--spool", os.path.join(w.root, "spool-" + h), "--name",
            "netns-" + h, "--heartbeat-ms", str(HEARTBEAT_MS)],
            "daemon-%s.log" % h)
    keys = ",".join("'%s'" % public_key(w.key(h)) for h in DAEMON_HOSTS)
    want = ",".join("netns-%s:t" % h for h in DAEMON_HOSTS)
    got = w.wait_for("SELECT string_agg(h.name || ':' || h.online::text, ',' "
                     "ORDER BY h.name) FROM hosts h WHERE h.public_key IN "
                     "(%s) AND EXISTS (SELECT 1 FROM host_suites s WHERE "
                     "s.host_id = h.id AND s.name = 'netns-job')"
                     % keys, want.replace(":t", ":true"), 20)
    ok(got == want.replace(":t", ":true"), "daemons: both show as online "
       "hosts with their suite after Hello (%s)" % got)

    r = w.client("run", "netns-job", "--hosts",
                 ",".join("netns-" + h for h in DAEMON_HOSTS), "--json")
    ok(r.returncode == 0, "parity run netns-job from the collector's "
       "namespace is accepted (%d %s)" % (r.returncode, r.stderr.strip()))
    d1 = host_id(w, "d1")
    if d1 is None:
        return
    got = w.wait_for("SELECT count(*) > 0 FROM batches b JOIN runs r ON "
                     "r.id = b.run WHERE r.host_id = %d" % d1, "t", 20)
    ok(got == "t", "d1: its job's batches are being stored")
    ok(w.psql("SELECT status IS NULL FROM runs WHERE host_id = %d" % d1)
       == "t", "d1: its run is still measuring when its link goes down")
    w.topo.link("d1", "down")
    down_at = time.time()
    got = w.wait_for("SELECT online FROM hosts WHERE id = %d" % d1, "f", 15)
    ok(got == "f", "d1: link down: the collector marks it offline after "
       "%.1f s" % (time.time() - down_at))
    got = w.psql("SELECT string_agg(state, ',') FROM job_hosts WHERE "
                 "host_id = %d" % d1)
    ok(got == "lost", "d1: the collector counts its job lost while it is "
       "offline (%s)" % got)
    d2 = host_id(w, "d2")
    ok(d2 is not None and
       w.psql("SELECT online FROM hosts WHERE id = %d" % d2) == "t",
       "d2: still online meanwhile (only d1's link is down)")
    time.sleep(1)
    w.topo.link("d1", "up")
    up_at = time.time()
    got = w.wait_for("SELECT online FROM hosts WHERE id = %d" % d1, "t", 25)
    ok(got == "t", "d1: link up: back online after %.1f s"
       % (time.time() - up_at))
    for h in DAEMON_HOSTS:
        hid = host_id(w, h)
        got = w.wait_for("SELECT string_agg(state, ',') FROM job_hosts "
                         "WHERE host_id = %d" % hid, "done", 45)
        ok(got == "done", "%s: its job ends done (%s)" % (h, got))
        row = w.rows("SELECT r.status, r.batches, r.samples, (SELECT "
                     "count(*) FROM batches b WHERE b.run = r.id), (SELECT "
                     "count(*) FROM samples s WHERE s.run = r.id), (SELECT "
                     "count(DISTINCT (s.batch_seq, s.idx)) FROM samples s "
                     "WHERE s.run = r.id) FROM runs r WHERE r.host_id = %d"
                     % hid)
        f = row[0] if len(row) == 1 else ["none", -1, -1, -2, -2, -3]
        ok(f[0] == "complete" and f[1] == f[3] and f[2] == f[4] == f[5]
           and int(f[2]) > 0, "%s: run stored complete, every batch (%s of "
           "%s) and sample (%s of %s, %s distinct) its RunEnd counts"
           % (h, f[3], f[1], f[4], f[2], f[5]))
        end = time.time() + 10
        while w.spooled(h) and time.time() < end:
            time.sleep(0.2)
        ok(w.spooled(h) == 0, "%s: its spool is empty" % h)
    late = w.psql("SELECT count(*) FROM batches b JOIN runs r ON r.id = "
                  "b.run WHERE r.host_id = %d AND extract(epoch FROM "
                  "b.received_at) > %f" % (d1, up_at))
    ok(late not in (None, "0"), "d1: %s of its batches were delivered after "
       "the link came back (spooled meanwhile)" % late)
    for h, p in daemons.items():
        rc = w.stop(p)
        ok(rc == 0, "%s: the daemon exits 0 on SIGTERM (%s)" % (h, rc))


def on_signal(sig, frame):
    raise Deadline("signal %d" % sig)


def main():
    if os.geteuid() != 0:
        skip_all("needs root for ip netns")
    if not shutil.which("ip"):
        skip_all("no ip (iproute2)")
    probe = "pty%d-probe" % os.getpid()
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True,
                       text=True)
    if r.returncode != 0:
        skip_all("ip netns add fails: " + r.stderr.strip())
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    for prog in (AGENT, COLLECTOR, PARITY, TESTPROG):
        if not os.access(prog, os.X_OK):
            print("Bail out! %s is not built" % prog, flush=True)
            sys.exit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGALRM, on_signal)
    signal.alarm(DEADLINE_S)
    started = time.time()
    topo = w = None
    try:
        topo = Topology()
        topo.build([h for h, _ in RUN_HOSTS] + [INTRUDER] + DAEMON_HOSTS)
        hosts = [h for h, _ in RUN_HOSTS] + [INTRUDER] + DAEMON_HOSTS
        listed = sh(["ip", "netns", "list"]).stdout.split()
        ok(len(topo.created) == len(hosts) + 1 and
           all(ns in listed for ns in topo.created) and
           len(set(topo.ip.values())) == len(hosts),
           "topology: %d namespaces on %s.0/24 (%s), each host its own "
           "address" % (len(topo.created), topo.subnet, topo.prefix))
        routes = {h: topo.routes(h) for h in ["c"] + list(topo.ns)}
        ok(all(len(rt.splitlines()) == 1 and
               rt.startswith("%s.0/24 dev %s " % (
                   topo.subnet, "br0" if h == "c" else "eth0"))
               for h, rt in routes.items()),
           "every namespace routes only its own /24 (no default route)")
        if tap.n_failed:
            diag("\n".join("%s: %s" % hr for hr in routes.items()))
        w = World(topo)
        w.start_collector()
        ok(w.collector.poll() is None and
           "event=listening" in w.log("collector.log"),
           "parity-collector listening on %s in %s"
           % (w.endpoint, topo.collector_ns))
        phase_run_mode(w)
        phase_daemon(w)
    except Deadline as e:
        ok(False, "the test ended early: %s after %.0f s" % (
            e, time.time() - started))
    except Exception as e:   # noqa: BLE001 -- report, then clean up
        ok(False, "the test stopped: %s: %s" % (type(e).__name__, e))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if tap.n_failed and w:
            diag("collector log tail:\n" + w.log("collector.log")[-3000:])
        if w:
            w.close(keep=tap.n_failed > 0 and bool(os.environ.get("PARITY_KEEP")))
        if topo:
            topo.close()
        left = sh(["ip", "netns", "list"], check=False).stdout
        ok(topo is None or "pty%d-" % os.getpid() not in left,
           "cleanup: no namespace of this run is left")
    diag("%.1f s" % (time.time() - started))
    pf.finish()


if __name__ == "__main__":
    main()
