#!/usr/bin/env python3
"""fleet_soak.py BUILD_DIR [--duration S] [--agents N] [--kill-every S]
[--pg-stop-at S] [--pg-stop-for S] [--job-every S] [--keep]

The soak, run by tests/bench/soak.sh. Real processes on
127.0.0.1 only: parity-collector with its private PostgreSQL in a temp dir,
--agents (20) parity-agent daemons with their own keys, suites and spools,
and the `parity` client creating a job for every host every --job-every
(15) s for --duration (600) s, while fewer than two of its jobs are
active: the agents share this machine's boot id, so the collector runs
their jobs one at a time (docs/protocol.md, 10.2), about 26 s of work
per job for 20 agents, and a job every 15 s would queue without bound. Meanwhile the collector is killed with
SIGKILL and started again (same data dir: it adopts the running server)
every --kill-every (120) s, and PostgreSQL is stopped (pg_ctl stop -m fast
as its owner) at --pg-stop-at (300) s for --pg-stop-for (20) s, then
started again.

At the end job creation stops, the agents finish the active jobs and
their spools drain (bounded: 300 s), the agents stop, and every sample
is accounted for against
the agents' own counts: each agent's log line `event=run_end run=ID
batches=B samples=N` (the RunEnd it spooled) against the stored run and
count(*) of its rows in samples; no (run, batch_seq, idx) twice; every
stored run is one an agent reported; every run has its RunEnd stored.

Last line: one JSON object: runs, samples_expected, samples_stored,
duplicates, missing, extra, runs_missing, runs_without_end,
runs_unknown, kills, pg_stops, jobs_created, jobs_active, spools_left,
ok.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402

SUITE = """suite: soak
defaults:
  runs: 30
  warmup: 1
  timeout: 30
benchmarks:
  - name: sleepy
    arms:
      - name: short
        subject: true
        command: [sleep, "0.01"]
      - name: long
        command: [sleep, "0.02"]
  - name: startup
    arms:
      - name: "true"
        subject: true
        command: [/bin/true]
      - name: echo
        command: [/bin/echo, soak]
"""


def opt(name, default):
    if name in sys.argv:
        i = sys.argv.index(name)
        v = int(sys.argv[i + 1])
        if v < 0 or v > 86400:
            sys.exit("fleet_soak: %s %d out of range" % (name, v))
        return v
    return default


BUILD = os.path.abspath(sys.argv[1])
DURATION = opt("--duration", 600)
NAGENTS = opt("--agents", 20)
KILL_EVERY = opt("--kill-every", 120)
PG_STOP_AT = opt("--pg-stop-at", DURATION // 2)
PG_STOP_FOR = opt("--pg-stop-for", 20)
JOB_EVERY = opt("--job-every", 15)
KEEP = "--keep" in sys.argv
DRAIN_S = 300
if NAGENTS < 1 or NAGENTS > 200:
    sys.exit("fleet_soak: --agents 1..200")

AGENT = os.path.join(BUILD, "agent", "parity-agent")
COLLECTOR = os.path.join(BUILD, "collector", "parity-collector")
PARITY = os.path.join(BUILD, "collector", "client", "parity")
PGBIN = pf.pg_bindir()


def say(text):
    print("soak: %6.0f s  %s" % (time.time() - T0, text), flush=True)


class Soak(pf.World):
    def __init__(self):
        super().__init__("parity-soak-", PARITY, COLLECTOR)
        with open(os.path.join(self.suites, "soak.yaml"), "w") as f:
            f.write(SUITE)
        self.port = pf.free_port()
        self.endpoint = "tcp://127.0.0.1:%d" % self.port
        self.names = ["soak-%02d" % i for i in range(NAGENTS)]
        self.keygen("collector")
        self.keygen("admin", admin=True)
        for n in self.names:
            self.keygen(n, allow=True)
        self.log = open(os.path.join(self.root, "collector.log"), "ab")
        self.agents = {}
        self.kills = 0
        self.pg_stops = 0
        self.jobs = 0
        self.job_failures = 0

    def start_collector(self, timeout=120):
        # 1000 ms: the collector's default heartbeat, what the soak is of.
        self.collector = subprocess.Popen(
            self.collector_cmd(self.endpoint, 1000),
            stdout=self.log, stderr=self.log)
        self.wait_tcp(self.collector, self.port,
                      lambda: "see " + os.path.join(self.root,
                                                    "collector.log"),
                      timeout)

    def kill_collector(self):
        self.collector.send_signal(signal.SIGKILL)
        self.collector.wait(timeout=30)
        self.kills += 1

    def stop_collector(self):
        self.stop(self.collector, wait=60)

    def start_agent(self, name):
        self.agents[name] = self.spawn_agent(AGENT, self.endpoint, name)

    def stop_agents(self):
        pf.stop_all(self.agents.values())

    def pg_ctl(self, *args):
        return subprocess.run(
            pf.as_pg_owner([os.path.join(PGBIN, "pg_ctl"), "-D",
                            os.path.join(self.data, "pg")] + list(args)),
            capture_output=True, text=True, timeout=120)

    def psql(self, sql):
        """All the rows, tab-separated; raises on an error: the soak's
        accounting reads whole tables and cannot go on without them."""
        r = subprocess.run(self.psql_cmd(sql) + ["-F", "\t"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr.strip())
        return r.stdout

    def parity(self, *args, timeout=30):
        e = dict(os.environ)
        e.update({"PARITY_COLLECTOR": self.endpoint,
                  "PARITY_COLLECTOR_KEY": os.path.join(self.keys,
                                                       "collector"),
                  "PARITY_KEY": os.path.join(self.keys, "admin"),
                  "HOME": self.root})
        e.pop("XDG_CONFIG_HOME", None)
        try:
            return subprocess.run([PARITY] + list(args), capture_output=True,
                                  text=True, timeout=timeout, env=e)
        except subprocess.TimeoutExpired:
            return None

    def create_job(self):
        r = self.parity("run", "soak", "--hosts", "all", "--label", "soak",
                        "--json", "--timeout", "5")
        if r is not None and r.returncode == 0:
            self.jobs += 1
        else:
            self.job_failures += 1

    def active_jobs(self):
        """Jobs not yet ended, or None while the database is away."""
        try:
            return int(self.psql("SELECT count(*) FROM jobs WHERE state = "
                                 "'active'").strip())
        except (RuntimeError, ValueError, subprocess.TimeoutExpired):
            return None

    def agent_log(self, name):
        path = os.path.join(self.root, "agent-" + name, "agent.log")
        with open(path, errors="replace") as f:
            return f.read()

    def spool_left(self):
        n = 0
        for name in self.names:
            d = os.path.join(self.root, "agent-" + name, "spool")
            if os.path.isdir(d):
                n += sum(1 for f in os.listdir(d) if f.endswith(".msg"))
        return n

    def open_runs(self):
        """Runs an agent started and has not ended (by its log)."""
        n = 0
        for name in self.names:
            text = self.agent_log(name)
            started = set(re.findall(r"event=run_start run=(\S+)", text))
            ended = set(re.findall(r"event=run_end run=(\S+)", text))
            n += len(started - ended)
        return n


def account(s):
    """The agents' RunEnd counts against the database."""
    expected = {}   # run id -> (agent, samples, batches)
    twice = 0
    for name in s.names:
        for m in re.finditer(r"event=run_end run=(\S+) status=(\S+) "
                             r"batches=(\d+) samples=(\d+)",
                             s.agent_log(name)):
            rid = m.group(1).strip('"')
            if rid in expected:
                twice += 1   # a second RunEnd of one run: first kept
                continue
            expected[rid] = (name, int(m.group(4)), int(m.group(3)))
    stored = {}
    for line in s.psql(
            "SELECT r.run_uuid, coalesce(r.status, ''), "
            "coalesce(r.samples, -1), (SELECT count(*) FROM samples s "
            "WHERE s.run = r.id) FROM runs r").splitlines():
        rid, status, claimed, count = line.split("\t")
        stored[rid] = (status, int(claimed), int(count))
    dups = int(s.psql(
        "SELECT count(*) FROM (SELECT run, batch_seq, idx FROM samples "
        "GROUP BY run, batch_seq, idx HAVING count(*) > 1) d").strip())
    dup_rows = int(s.psql(
        "SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM "
        "samples GROUP BY run, batch_seq, idx HAVING count(*) > 1) d")
        .strip())
    res = {"runs": len(expected), "samples_expected": 0,
           "samples_stored": 0, "duplicates": dups,
           "duplicate_rows": dup_rows, "missing": 0, "extra": 0,
           "runs_missing": 0, "runs_without_end": 0, "runs_unknown": 0,
           "runend_mismatch": 0, "second_run_ends": twice}
    for rid, (agent, n, _) in expected.items():
        res["samples_expected"] += n
        st = stored.get(rid)
        if st is None:
            res["runs_missing"] += 1
            res["missing"] += n
            continue
        status, claimed, count = st
        res["samples_stored"] += count
        if status == "":
            res["runs_without_end"] += 1
        if claimed != n:
            res["runend_mismatch"] += 1
        if count < n:
            res["missing"] += n - count
        elif count > n:
            res["extra"] += count - n
    res["runs_unknown"] = sum(1 for rid in stored if rid not in expected)
    return res


def main():
    global T0
    T0 = time.time()
    s = Soak()
    say("dir %s, %d agents, %d s, kill -9 every %d s, PostgreSQL stopped "
        "at %d s for %d s" % (s.root, NAGENTS, DURATION, KILL_EVERY,
                              PG_STOP_AT, PG_STOP_FOR))
    s.start_collector()
    for n in s.names:
        s.start_agent(n)
    time.sleep(3)
    T0 = time.time()
    next_kill = KILL_EVERY if KILL_EVERY > 0 else DURATION + 1
    pg_stopped_at = None
    pg_done = PG_STOP_FOR == 0
    next_job = 0
    left = active = None
    try:
        while True:
            t = time.time() - T0
            if t >= DURATION:
                break
            if t >= next_job:
                active = s.active_jobs()
                if active is not None and active < 2:
                    s.create_job()
                    next_job = t + JOB_EVERY
            if t >= next_kill:
                s.kill_collector()
                s.start_collector()
                say("collector killed (-9) and started again (%d)" % s.kills)
                next_kill += KILL_EVERY
            if not pg_done and pg_stopped_at is None and t >= PG_STOP_AT:
                r = s.pg_ctl("-m", "fast", "-w", "-t", "60", "stop")
                if r.returncode == 0:
                    s.pg_stops += 1
                    pg_stopped_at = t
                    say("PostgreSQL stopped")
                else:
                    say("pg_ctl stop failed: %s" % r.stderr.strip())
                    pg_done = True
            if pg_stopped_at is not None and t >= pg_stopped_at + PG_STOP_FOR:
                r = s.pg_ctl("-l", os.path.join(s.data, "pg.log"), "-w",
                             "-t", "60", "start")
                st = s.pg_ctl("status")
                say("PostgreSQL started again (%s)" %
                    ("running" if st.returncode == 0 else
                     "NOT running: " + r.stderr.strip()))
                pg_stopped_at = None
                pg_done = True
            for n, p in s.agents.items():
                if p.poll() is not None:
                    say("agent %s exited %d; started again" % (n, p.returncode))
                    s.start_agent(n)
            time.sleep(0.5)
        if pg_stopped_at is not None:
            s.pg_ctl("-l", os.path.join(s.data, "pg.log"), "-w", "-t", "60",
                     "start")
        say("load stopped: %d jobs created (%d refused or unanswered); "
            "draining" % (s.jobs, s.job_failures))
        end = time.time() + DRAIN_S
        quiet = 0
        while time.time() < end and quiet < 3:
            left, open_runs = s.spool_left(), s.open_runs()
            active = s.active_jobs()
            quiet = (quiet + 1 if left == 0 and open_runs == 0 and
                     active == 0 else 0)
            time.sleep(2)
        # Stopped before the count: an agent still at work could store a
        # run between the reading of its log and the query.
        s.stop_agents()
        left, active = s.spool_left(), s.active_jobs()
        say("drained: %d spooled messages left, %d runs open, %s jobs "
            "active" % (left, s.open_runs(), active))
        res = account(s)
    finally:
        s.stop_agents()
        s.stop_collector()
        s.log.close()
    res.update({"kills": s.kills, "pg_stops": s.pg_stops,
                "jobs_created": s.jobs, "jobs_active": active,
                "spools_left": left})
    res["ok"] = (res["duplicates"] == 0 and res["missing"] == 0 and
                 res["extra"] == 0 and res["runs_missing"] == 0 and
                 res["runs_without_end"] == 0 and res["runs_unknown"] == 0
                 and res["runend_mismatch"] == 0 and left == 0 and
                 active == 0 and res["runs"] > 0)
    if KEEP or not res["ok"]:
        say("kept %s" % s.root)
    else:
        shutil.rmtree(s.root, ignore_errors=True)
    print(json.dumps(res), flush=True)
    return 0 if res["ok"] else 1


T0 = time.time()
if __name__ == "__main__":
    sys.exit(main())
