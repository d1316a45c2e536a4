#!/usr/bin/env python3
"""test_jobs.py CASE BUILD_DIR -- jobs across the fleet (TAP).

Real processes: parity-collector with its private PostgreSQL in a fresh
temp dir, three parity-agent daemons (alpha, beta, gamma), keys from
`parity keygen`, sockets on 127.0.0.1 only, and the `parity` client.

  fleet    a job across three agents: every host's verdict stored and
           shown, cross-host summary counts and geomean right, job tags
           on every run, show/export; a client key on --allow but not
           --admin, and an unknown key, can neither run, cancel nor
           query; an agent stopped before a job and started later runs
           it; an agent killed during a job shows `lost` and the job ends
           with the other hosts' results; --expire; cancel; a wrong
           collector key
  restart  malformed Requests (not JSON, wrong types, huge strings,
           unknown commands and arguments, SQL in a job id) each get their
           exact error and the collector lives on; a client using an
           agent's key does not cut the agent off; `run --wait` names the
           offline host it waits for; the collector killed (SIGKILL, then
           SIGTERM) in the middle of a job and started again: the job
           still ends with every host done and its verdict; an agent
           that never comes back after a restart is lost after 30 s and
           the job ends; an agent restarted at once, and a (fake) agent
           whose new connection beats idle, are lost; the database stopped under the collector:
           one-line status 5 answers
  machine  two agents of one machine calibrating every second while
           each runs a job that sleeps (the machine looks quiet) and
           both one more: no calibration batch overlaps another or a
           job's runs, by the runs' own instants
  client   every client setting error (missing, wrong, from flags, env or
           client.yaml) and an unreachable collector; needs no collector
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, diag, bail, free_port, pg_bindir, tap  # noqa: E402,F401,E501

BUILD = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else
                        os.environ["PARITY_BUILD_DIR"])
AGENT = os.path.join(BUILD, "agent", "parity-agent")
COLLECTOR = os.path.join(BUILD, "collector", "parity-collector")
PARITY = os.path.join(BUILD, "collector", "client", "parity")
REQUEST = os.path.join(BUILD, "tests", "helpers", "jobs-request")
HEARTBEAT_MS = "200"   # offline after 5 beats: 1 s

# /bin/true against echo: the cheapest pair (fleet's and quick's startup).
STARTUP_ARMS = """    arms:
      - name: "true"
        subject: true
        command: [/bin/true]
      - name: echo
        command: [/bin/echo, hello]
"""

SUITE = """suite: fleet
defaults:
  runs: 6
  warmup: 1
benchmarks:
  - name: sleepy
    arms:
      - name: fast
        subject: true
        command: [sleep, "0.02"]
      - name: slow
        command: [sleep, "0.2"]
  - name: startup
""" + STARTUP_ARMS

# Long enough to kill an agent in the middle: 40 rounds of 2 x 0.1 s.
LONG_SUITE = """suite: long
benchmarks:
  - name: slowpoke
    runs: 40
    warmup: 0
    arms:
      - name: a
        subject: true
        command: [sleep, "0.1"]
      - name: b
        command: [sleep, "0.1"]
"""


class World(pf.World):
    """Keys for three agents (alpha, beta, gamma), a stranger on the
    allow-list, and keys no collector knows; the fleet and long suites."""

    def __init__(self):
        super().__init__("parity-jobs-", PARITY, COLLECTOR)
        with open(os.path.join(self.suites, "fleet.yaml"), "w") as f:
            f.write(SUITE)
        with open(os.path.join(self.suites, "long.yaml"), "w") as f:
            f.write(LONG_SUITE)
        self.port = free_port()
        self.endpoint = "tcp://127.0.0.1:%d" % self.port
        for name in ("collector", "alpha", "beta", "gamma", "admin",
                     "stranger", "unknown", "impostor"):
            self.keygen(name, allow=name in ("alpha", "beta", "gamma",
                                             "stranger"),
                        admin=name == "admin")
        self.agents = {}
        self.log = open(os.path.join(self.root, "collector.log"), "ab")

    def write_suites(self, files):
        """Each {FILE: TEXT} into the agents' --suites directory."""
        for name, text in files.items():
            with open(os.path.join(self.suites, name), "w") as f:
                f.write(text)

    def start_collector(self):
        self.collector = subprocess.Popen(
            self.collector_cmd(self.endpoint, HEARTBEAT_MS),
            stdout=self.log, stderr=self.log)
        self.wait_tcp(self.collector, self.port)

    def start_agent(self, name, *extra):
        self.agents[name] = self.spawn_agent(
            AGENT, self.endpoint, name, "--heartbeat-ms", HEARTBEAT_MS,
            *extra)

    def allow_hosts(self, names):
        """Keys for hosts names on the allow-list (fleet-feed's hosts,
        which no agent of this world plays); self."""
        for n in names:
            self.keygen(n, allow=True)
        return self

    def start_fleet(self, names, *extra):
        """The collector, then the agents names (each with extra
        options); True once `parity hosts` shows them all online."""
        self.start_collector()
        for n in names:
            self.start_agent(n, *extra)
        return self.wait_online(list(names), True)

    def stop_agent(self, name, sig=signal.SIGTERM):
        self.stop(self.agents.pop(name, None), sig)

    def client_env(self, key="admin", extra=None):
        """The environment a `parity` client of this fleet runs with."""
        e = dict(os.environ)
        e.update({"PARITY_COLLECTOR": self.endpoint,
                  "PARITY_COLLECTOR_KEY": self.key("collector"),
                  "PARITY_KEY": self.key(key), "HOME": self.root})
        e.pop("XDG_CONFIG_HOME", None)
        e.update(extra or {})
        return e

    def parity(self, *args, key="admin", timeout=60, env=None):
        return subprocess.run([PARITY] + list(args), capture_output=True,
                              text=True, timeout=timeout,
                              env=self.client_env(key, env))

    def pjson(self, *args, **kw):
        r = self.parity(*args, **kw)
        try:
            return json.loads(r.stdout)
        except ValueError:
            diag("parity %s: rc %d\n%s%s" % (" ".join(args), r.returncode,
                                             r.stdout, r.stderr))
            return None

    def host_states(self):
        h = self.pjson("hosts", "--json")
        return {x["name"]: x["online"] for x in (h or {}).get("hosts", [])}

    def wait_online(self, names, online, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            st = self.host_states()
            if all(st.get(n) is online for n in names):
                return True
            time.sleep(0.2)
        return False

    def wait_job(self, job_id, timeout):
        end = time.time() + timeout
        v = None
        while time.time() < end:
            v = self.pjson("verdicts", job_id, "--json")
            if v and v.get("state") != "active":
                return v
            time.sleep(0.3)
        return v

    def close(self, keep):
        for n in list(self.agents):
            self.stop_agent(n)
        if self.collector and self.collector.poll() is None:
            rc = self.stop(self.collector, wait=30)
            ok(rc == 0, "the collector exits 0 on SIGTERM (%d)" % rc)
        self.log.close()
        reports = self.sanitizer_logs()
        ok(not reports, "no sanitizer report in the logs %s" % reports)
        self.remove(keep)


def run_world(world, *cases):
    """The cases (functions of one world) in order, the world closed in
    any case (kept when a check failed), then the plan."""
    try:
        for case in cases:
            case(world)
    finally:
        world.close(keep=tap.n_failed > 0)
    pf.finish()


def requests(w, lines, key="admin", timeout_ms=5000):
    """Send (command, args_text) pairs with jobs-request; their answers
    as (status, text) pairs (status "TIMEOUT" when none came)."""
    text = "".join("%s\t%s\n" % (c, a) for c, a in lines)
    r = subprocess.run([REQUEST, w.endpoint, w.key("collector"), w.key(key),
                        str(timeout_ms)], input=text, capture_output=True,
                       text=True, timeout=120)
    out = []
    for line in r.stdout.splitlines():
        st, _, rest = line.partition("\t")
        out.append((st, rest))
    return out + [("MISSING", "")] * (len(lines) - len(out))


def host_map(v):
    return {h["host"]: h for h in v.get("hosts", [])}


def case_fleet():
    w = World()
    try:
        ok(w.start_fleet(("alpha", "beta", "gamma")),
           "three agents are online in `parity hosts`")
        hosts = w.pjson("hosts", "--json") or {"hosts": []}
        ok(all("fleet" in h["suites"] and h["floor_us"] > 0
               for h in hosts["hosts"]),
           "every host lists suite fleet and has a floor")
        r = w.parity("hosts")
        ok(r.returncode == 0 and all(n in r.stdout for n in
                                     ("alpha", "beta", "gamma", "online")),
           "parity hosts prints a table of the three hosts")

        # -- a job across three agents ----------------------------------
        r = w.parity("run", "fleet", "--wait", "--tag", "commit=abc123",
                     "--tag", "branch=main", "--label", "e2e", timeout=120)
        ok(r.returncode == 0, "parity run fleet --wait exits 0 (%d: %s)" %
           (r.returncode, r.stderr.strip()[-300:]))
        ok("job " in r.stdout and "sleepy" in r.stdout and
           "fast vs slow" in r.stdout and "summary" in r.stdout,
           "--wait prints the verdict table")
        ok("alpha" in r.stderr and "done" in r.stderr,
           "--wait printed progress lines")
        ended = [ln.split() for ln in r.stderr.splitlines()
                 if ln.rstrip().endswith(": complete")]
        ok(all(any(e[0] == h and e[1] == b + ":" for e in ended)
               for h in ("alpha", "beta", "gamma")
               for b in ("sleepy", "startup")),
           "--wait tells each host's end of every benchmark, the 50 ms "
           "startup too (%s)" % ended)
        jobs = w.pjson("jobs", "--json") or {"jobs": [{}]}
        job = jobs["jobs"][0].get("job", "?")
        r = w.parity("jobs")
        lines = r.stdout.splitlines()
        ok(r.returncode == 0 and lines and lines[0].split()[-1] == "label"
           and any(ln.startswith(job) and ln.rstrip().endswith(" e2e")
                   for ln in lines),
           "parity jobs shows the label in its last column (%s)" % lines[:2])
        v = w.pjson("verdicts", job, "--json") or {}
        cmps = v.get("comparisons", [])
        ok(len(cmps) == 2, "two comparisons (sleepy, startup): %d" %
           len(cmps))
        ok(all(len(c["hosts"]) == 3 and all("verdict" in h
                                             for h in c["hosts"])
               for c in cmps), "every comparison has a verdict from each "
           "of the three hosts")
        # The three agents run on this one machine (one boot id): the
        # collector gives the job to one of them at a time.
        overlap = w.psql("SELECT count(*) FROM job_hosts a JOIN job_hosts b "
                         "ON a.job = b.job AND a.host_id < b.host_id JOIN "
                         "jobs j ON j.id = a.job WHERE j.job_uuid = '%s' AND "
                         "a.offered_at_us < b.ended_at_us AND "
                         "b.offered_at_us < a.ended_at_us" % job)
        ok(overlap == "0", "agents of one machine never ran the job at the "
           "same time (overlapping pairs: %s)" % overlap)
        hosts = w.pjson("hosts", "--json") or {"hosts": []}
        same = {h["name"]: h.get("same_machine") for h in hosts["hosts"]}
        ok(same.get("alpha") == ["beta", "gamma"] and
           same.get("gamma") == ["alpha", "beta"],
           "hosts --json: same_machine names the other agents (%s)" % same)
        r = w.parity("hosts")
        ok(r.returncode == 0 and "one machine (boot id " in r.stdout and
           "alpha, beta, gamma: their jobs run one at a time" in r.stdout,
           "parity hosts says the three hosts are one machine")
        stored = w.psql("SELECT count(*) FROM verdicts v JOIN runs r ON "
                        "r.id = v.run WHERE r.job_id = '%s'" % job)
        ok(stored == "6", "6 verdicts stored for the job (%s)" % stored)
        for c in cmps:
            outs = [h["verdict"]["outcome"] for h in c["hosts"]]
            s = c["summary"]
            ok(s["hosts"] == 3 and s["win"] == outs.count("win") and
               s["parity"] == outs.count("parity") and
               s["loss"] == outs.count("loss"),
               "%s: summary counts %s match the hosts' outcomes %s" %
               (c["benchmark"], (s["win"], s["parity"], s["loss"]), outs))
            gm = math.exp(sum(math.log(h["verdict"]["ratio"])
                              for h in c["hosts"]) / 3)
            ok(abs(s["geomean_ratio"] - gm) < 1e-9 * gm,
               "%s: geomean %.6f is the geometric mean of the ratios" %
               (c["benchmark"], s["geomean_ratio"]))
            if len(set(outs)) == 1:
                want = "%s on all 3 hosts" % outs[0]
            else:
                want = "mixed: "
            ok(s["consensus"].startswith(want), "%s: consensus \"%s\"" %
               (c["benchmark"], s["consensus"]))
        sleepy = [c for c in cmps if c["benchmark"] == "sleepy"]
        ok(sleepy and sleepy[0]["summary"]["win"] == 3,
           "sleep 0.02 against sleep 0.2 is a win on all 3 hosts")
        untagged = w.psql("SELECT count(*) FROM runs WHERE job_id = '%s' "
                          "AND NOT (tags @> '{\"commit\": \"abc123\", "
                          "\"branch\": \"main\"}')" % job)
        nruns = w.psql("SELECT count(*) FROM runs WHERE job_id = '%s'" % job)
        ok(untagged == "0" and nruns == "6", "all %s runs keep the job's "
           "tags (untagged: %s)" % (nruns, untagged))
        run_id = cmps[0]["hosts"][0]["run_id"] if cmps else "?"
        doc = w.pjson("show", run_id) or {}
        b = (doc.get("benchmarks") or [{}])[0]
        ok(doc.get("schema_version") == 3 and len(b.get("samples", [])) > 0
           and b.get("verdict") and doc.get("floor", {}).get("floor_us")
           and doc.get("tags", {}).get("commit") == "abc123",
           "parity show RUN: a schema 3 results file with samples, "
           "verdict, floor and the job's tags")
        out = os.path.join(w.root, "export")
        r = w.parity("export", job, "--out", out)
        files = sorted(os.listdir(out)) if os.path.isdir(out) else []
        ok(r.returncode == 0 and files == ["alpha.json", "beta.json",
                                           "gamma.json"],
           "parity export writes one results file per host: %s" % files)
        if files:
            with open(os.path.join(out, "alpha.json")) as f:
                d = json.load(f)
            ok(len(d["benchmarks"]) == 2 and len(d["run_ids"]) == 2,
               "alpha.json holds both benchmarks of the job")
        for fmt in ("--csv", "--markdown"):
            r = w.parity("verdicts", job, fmt)
            ok(r.returncode == 0 and "sleepy" in r.stdout,
               "parity verdicts %s" % fmt)
        r = w.parity("verdicts", "--latest")
        ok(r.returncode == 0 and job in r.stdout,
           "parity verdicts --latest shows job %s" % job)
        # Two jobs queued at once: the machine takes its oldest job next,
        # whichever agent it is for. A host that ends the first job must
        # not take its own second one while its siblings still wait for
        # the first (that starved siblings for as long as one had work).
        first, second = [
            (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
            for r in (w.parity("run", "fleet", "--only", "startup",
                               "--json") for _ in range(2))]
        done = [w.wait_job(j, 90) if j else None for j in (first, second)]
        ok(all(d and d.get("state") == "ended" for d in done),
           "two queued jobs ended (%s)" % [d and d.get("state")
                                           for d in done])
        order = w.psql(
            "SELECT j.job_uuid FROM job_hosts h JOIN jobs j ON j.id = h.job "
            "WHERE j.job_uuid IN ('%s', '%s') ORDER BY h.offered_at_us"
            % (first, second)).split()
        ok(order == [first] * 3 + [second] * 3,
           "one machine's agents got the older job first, all three before "
           "any took the newer one (%s)" % order)

        # -- hosts picked by a tag of their Hello ----------------------
        arch = os.uname().machine
        r = w.parity("run", "fleet", "--hosts", "arch=" + arch, "--only",
                     "startup", "--runs", "3", "--json")
        reply = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(sorted(h["host"] for h in reply.get("hosts", [])) ==
           ["alpha", "beta", "gamma"], "--hosts arch=%s picks the three "
           "hosts by their Hello tag" % arch)
        v = w.wait_job(reply.get("job", "?"), 60) or {}
        ok(v.get("state") == "ended" and
           [c["benchmark"] for c in v.get("comparisons", [])] == ["startup"],
           "that job ran only --only startup and ended")
        # -- runs: auto through the collector (PW_RUNS_AUTO) -----------
        r = w.parity("run", "fleet", "--hosts", "alpha", "--only", "sleepy",
                     "--runs", "auto", "--json")
        reply = json.loads(r.stdout) if r.returncode == 0 else {}
        auto_job = reply.get("job", "?")
        ok(w.psql("SELECT runs FROM jobs WHERE job_uuid = '%s'" % auto_job)
           == "1", "--runs auto is kept as runs 1 (PW_RUNS_AUTO)")
        v = w.wait_job(auto_job, 60) or {}
        rounds = w.psql("SELECT r.runs || ' ' || (SELECT max(s.round) + 1 "
                        "FROM samples s WHERE s.run = r.id AND s.kind = 0) "
                        "FROM runs r WHERE r.job_id = '%s'" % auto_job)
        ok(v.get("state") == "ended" and rounds == "100 10",
           "alpha ran it as runs: auto: planned for the cap of 100, "
           "decisive after 10 rounds (20 ms against 200 ms): %s" % rounds)
        store = [f for f in os.listdir(os.path.join(w.root, "agent-alpha",
                                                    "spool"))
                 if f.startswith("calibration-")]
        ok(any(f.startswith("calibration-") and not f.endswith(".lock")
               for f in store), "the agent keeps its calibration store in "
           "its state directory (--spool): %s" % store)
        r = w.parity("run", "fleet", "--hosts", "arch=no-such-arch")
        ok(r.returncode == 1 and "no host matches" in r.stderr,
           "a tag no host has is refused (%s)" % r.stderr.strip())
        r = w.parity("run", "fleet", "--only", "nosuchbench")
        ok(r.returncode == 1 and "no benchmark" in r.stderr,
           "--only a benchmark the suite lacks is refused")

        # -- authorisation ---------------------------------------------
        before = w.psql("SELECT count(*) FROM jobs")
        for args in (("run", "fleet"), ("cancel", job), ("hosts",),
                     ("verdicts", job), ("jobs",), ("show", run_id)):
            r = w.parity(*args, key="stranger")
            ok(r.returncode == 1 and "forbidden" in r.stderr,
               "a key on --allow but not --admin: parity %s is forbidden "
               "(%d: %s)" % (args[0], r.returncode, r.stderr.strip()))
            # Enrollment is on: an unknown key gets through the handshake
            # (an agent's would wait as pending) and is forbidden here.
            r = w.parity(*args, key="unknown", env={"PARITY_TIMEOUT": "3"})
            ok(r.returncode == 1 and "forbidden: this client's key is not "
               "in the collector's --admin directory" in r.stderr,
               "an unknown key: parity %s is forbidden (%d: %s)"
               % (args[0], r.returncode, r.stderr.strip()))
        ok(w.psql("SELECT count(*) FROM jobs") == before,
           "no job was created by them")
        ok(w.psql("SELECT state FROM jobs WHERE job_uuid = '%s'" % job) ==
           "ended", "and the job was not cancelled")
        shutil.copy(w.key("stranger"), w.admin)
        r = w.parity("jobs", key="stranger")
        ok(r.returncode == 0 and job in r.stdout,
           "stranger's key copied into --admin: it may query at once")
        os.unlink(os.path.join(w.admin, "stranger"))
        r = w.parity("jobs", key="stranger")
        ok(r.returncode == 1 and "forbidden" in r.stderr,
           "and removed: forbidden again")
        r = w.parity("hosts", env={"PARITY_TIMEOUT": "3",
                                   "PARITY_COLLECTOR_KEY":
                                   w.key("impostor")})
        ok(r.returncode == 3 and "handshake" in r.stderr and
           "collector key" in r.stderr,
           "a wrong collector key: the handshake fails and the error says "
           "so (%s)" % r.stderr.strip())

        # -- an agent stopped before the job, started later -------------
        w.stop_agent("gamma")
        ok(w.wait_online(["gamma"], False), "gamma is offline after SIGTERM")
        r = w.parity("run", "fleet", "--only", "sleepy", "--json")
        reply = json.loads(r.stdout) if r.returncode == 0 else {}
        job2 = reply.get("job", "?")
        st = {h["host"]: h["state"] for h in reply.get("hosts", [])}
        ok(st.get("gamma") == "queued", "the job is queued for offline "
           "gamma: %s" % st)
        # alpha and beta share this machine: they run it one after the
        # other (a few seconds each, more under ASan).
        deadline = time.time() + 60
        while True:
            v = w.pjson("verdicts", job2, "--json") or {}
            hm = host_map(v)
            if all(hm.get(n, {}).get("state") == "done"
                   for n in ("alpha", "beta")) or time.time() > deadline:
                break
            time.sleep(0.5)
        ok(v.get("state") == "active" and
           all(hm.get(n, {}).get("state") == "done"
               for n in ("alpha", "beta")) and
           hm.get("gamma", {}).get("state") == "queued",
           "alpha and beta are done, the job waits for gamma: %s" %
           {k: x["state"] for k, x in hm.items()})
        w.start_agent("gamma")
        v = w.wait_job(job2, 60) or {}
        hm = host_map(v)
        ok(v.get("state") == "ended" and
           all(hm.get(n, {}).get("state") == "done"
               for n in ("alpha", "beta", "gamma")),
           "gamma ran it when it came back; the job ended with 3 hosts "
           "done: %s" % {k: x["state"] for k, x in hm.items()})
        ok(len((v.get("comparisons") or [{}])[0].get("hosts", [])) == 3,
           "and its verdict is in the table")

        # -- an agent killed during the job -----------------------------
        r = w.parity("run", "long", "--json")
        job3 = (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
        end = time.time() + 30
        started = False
        while time.time() < end and not started:
            started = w.psql("SELECT count(*) FROM samples s JOIN runs r ON "
                             "r.id = s.run JOIN hosts h ON h.id = r.host_id "
                             "WHERE r.job_id = '%s' AND h.name = 'gamma'"
                             % job3) not in (None, "0")
            time.sleep(0.2)
        ok(started, "gamma is in the middle of job %s" % job3)
        w.stop_agent("gamma", signal.SIGKILL)
        v = w.wait_job(job3, 60) or {}
        hm = host_map(v)
        ok(hm.get("gamma", {}).get("state") == "lost",
           "killed gamma shows lost (%s: %s)" %
           (hm.get("gamma", {}).get("state"),
            hm.get("gamma", {}).get("reason")))
        ok(v.get("state") == "ended" and
           hm.get("alpha", {}).get("state") == "done" and
           hm.get("beta", {}).get("state") == "done",
           "the job ended with alpha and beta done")
        c = (v.get("comparisons") or [{}])[0]
        ok(sorted(h["host"] for h in c.get("hosts", [])
                  if "verdict" in h) == ["alpha", "beta"] and
           c.get("summary", {}).get("hosts") == 2,
           "its verdicts are the other two hosts', summary over 2 hosts")
        r = w.parity("verdicts", job3)
        ok("gamma: lost" in r.stdout, "the table says gamma was lost")

        # gamma back: its run ends INCOMPLETE; it is listed, never counted.
        w.start_agent("gamma")
        end = time.time() + 30
        st = None
        while time.time() < end and st != "incomplete":
            st = w.psql("SELECT r.status FROM runs r JOIN hosts h ON "
                        "h.id = r.host_id WHERE r.job_id = '%s' AND "
                        "h.name = 'gamma'" % job3)
            time.sleep(0.2)
        v = w.pjson("verdicts", job3, "--json") or {}
        c = (v.get("comparisons") or [{}])[0]
        g = [h for h in c.get("hosts", []) if h["host"] == "gamma"]
        ok(st == "incomplete" and g and "verdict" not in g[0] and
           c.get("summary", {}).get("hosts") == 2 and
           host_map(v).get("gamma", {}).get("state") == "lost",
           "restarted gamma's run is stored incomplete: listed, not "
           "counted, gamma stays lost (%s)" % st)
        w.stop_agent("gamma")
        ok(w.wait_online(["gamma"], False), "gamma is offline again")

        # -- expiry and cancel -----------------------------------------
        r = w.parity("run", "fleet", "--hosts", "gamma", "--expire", "1s",
                     "--json")
        job4 = (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
        v = w.wait_job(job4, 20) or {}
        ok(host_map(v).get("gamma", {}).get("state") == "expired" and
           v.get("state") == "ended",
           "a job for offline gamma with --expire 1s ends expired")
        r = w.parity("verdicts", job4)
        reason = host_map(v).get("gamma", {}).get("reason", "")
        ok(r.returncode == 1 and "gamma: expired" in r.stdout and
           r.stderr == "parity verdicts: job %s (ended): no host produced a "
           "verdict:\n  gamma: expired%s%s\n" % (job4, ": " if reason else "",
                                                reason),
           "verdicts of a job no host judged: exit 1, each host's reason on "
           "stderr (%s)" % r.stderr.strip())
        r = w.parity("verdicts", job4, "--json")
        ok(r.returncode == 1 and json.loads(r.stdout or "{}").get("job") ==
           job4, "--json too: the answer on stdout, exit 1")
        r = w.parity("run", "long", "--hosts", "alpha", "--json")
        job5 = (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
        time.sleep(1)
        r = w.parity("cancel", job5)
        ok(r.returncode == 0 and "cancelled on 1 host" in r.stdout,
           "parity cancel JOB (%s)" % r.stdout.strip())
        v = w.pjson("verdicts", job5, "--json") or {}
        ok(v.get("state") == "cancelled" and
           host_map(v).get("alpha", {}).get("state") == "cancelled",
           "the job and alpha's part are cancelled")
        end = time.time() + 20
        status = None
        while time.time() < end and status != "cancelled":
            status = w.psql("SELECT status FROM runs WHERE job_id = '%s'" %
                            job5)
            time.sleep(0.2)
        ok(status == "cancelled", "alpha stopped its run: stored status "
           "%s" % status)
        r = w.parity("jobs", "--active")
        ok(r.returncode == 0 and "no active job" in r.stdout,
           "parity jobs --active: nothing left (%s)" % r.stdout.strip())
        r = w.parity("cancel", "nosuchjob")
        ok(r.returncode == 1 and "no job" in r.stderr,
           "cancel of an unknown job says so")
        r = w.parity("run", "nosuite")
        ok(r.returncode == 1 and "no host can run suite" in r.stderr,
           "a suite no host has is refused (%s)" % r.stderr.strip())
        r = w.parity("run", "fleet", "--hosts", "nobody")
        ok(r.returncode == 1 and "no host is named" in r.stderr,
           "an unknown host name is refused")
        # A --var the suite never uses: only the agents know the suite's
        # variables (a Hello lists suites and benchmarks), so each agent
        # refuses the job naming them, and verdicts says so.
        r = w.parity("run", "fleet", "--hosts", "alpha", "--var",
                     "typo_input=x", "--wait", timeout=60)
        why = ('--var typo_input: suite "fleet" has no variable '
               '"typo_input" (it has no variables)')
        ok(r.returncode == 1 and why in r.stderr,
           "run --var the suite never uses: alpha refuses, naming the "
           "suite's variables (%d %s)" % (r.returncode, r.stderr[-300:]))
        r = w.parity("verdicts")
        ok(r.returncode == 1 and "alpha" in r.stdout + r.stderr and
           why in r.stdout + r.stderr,
           "verdicts of that job exits 1 with alpha's reason (%d %s)" %
           (r.returncode, (r.stdout + r.stderr)[-300:]))

        # -- a second key that calls itself "alpha" ----------------------
        w.keygen("twin")
        shutil.copy(w.key("twin"), w.allow)
        home = os.path.join(w.root, "agent-twin")
        os.makedirs(home, exist_ok=True)
        w.agents["twin"] = subprocess.Popen(
            [AGENT, "--collector", w.endpoint, "--collector-key",
             w.key("collector"), "--key", w.key("twin"), "--suites",
             w.suites, "--spool", os.path.join(home, "spool"),
             "--name", "alpha", "--heartbeat-ms", HEARTBEAT_MS],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=home)
        end = time.time() + 30
        n = "0"
        while time.time() < end and n != "2":
            n = w.psql("SELECT count(*) FROM hosts WHERE name = 'alpha'")
            time.sleep(0.2)
        ok(n == "2", "a second key saying \"alpha\" is a second host "
           "(%s rows)" % n)
        r = w.parity("run", "fleet", "--hosts", "alpha")
        ok(r.returncode == 1 and 'host name "alpha" is claimed by 2 hosts '
           'with different keys (parity hosts lists them): select by tag, '
           'or take the other keys off the allow-list' in r.stderr,
           "a name two keys claim is refused: %s" % r.stderr.strip())
        w.stop_agent("twin")
        # Agents in containers share their machine's boot id: a host lists
        # 16 others at most, and counts them all.
        boot = w.psql("SELECT boot_id FROM hosts WHERE name = 'beta'")
        w.psql("INSERT INTO hosts (public_key, name, boot_id) SELECT "
               "'box-key-' || i, 'box-' || lpad(i::text, 2, '0'), '%s' "
               "FROM generate_series(1, 20) i" % boot)
        hosts = w.pjson("hosts", "--json") or {"hosts": []}
        beta = [h for h in hosts["hosts"] if h["name"] == "beta"]
        others = int(w.psql("SELECT count(*) FROM hosts WHERE boot_id = "
                            "'%s' AND name <> 'beta'" % boot))
        ok(beta and len(beta[0]["same_machine"]) == 16 and
           beta[0]["same_machine"] == sorted(beta[0]["same_machine"]) and
           beta[0]["same_machine_count"] == others and others > 20,
           "same_machine lists 16 of beta's %d others, same_machine_count "
           "all (%s)" % (others, beta[0].get("same_machine_count")
                         if beta else None))
        r = w.parity("hosts")
        ok(r.returncode == 0 and "and %d more: their jobs run one at a "
           "time" % (others + 1 - 17) in r.stdout,
           "parity hosts names the first 17 of a machine and counts the rest")
    finally:
        w.close(keep=tap.n_failed > 0)


def wait_samples(w, job, hosts, timeout=30):
    """Until every one of hosts has stored samples of job."""
    end = time.time() + timeout
    while time.time() < end:
        n = w.psql("SELECT count(DISTINCT h.name) FROM samples s JOIN runs r "
                   "ON r.id = s.run JOIN hosts h ON h.id = r.host_id WHERE "
                   "r.job_id = '%s'" % job)
        if n == str(len(hosts)):
            return True
        time.sleep(0.2)
    return False


def restart_collector(w, sig):
    w.collector.send_signal(sig)
    try:
        w.collector.wait(timeout=30)
    except subprocess.TimeoutExpired:
        w.collector.kill()
        w.collector.wait()
    w.start_collector()


def case_restart():
    w = World()
    try:
        ok(w.start_fleet(("alpha", "beta")), "alpha and beta online")

        # -- a client using alpha's own key does not cut alpha off -------
        # (alpha idle: only heartbeats, which never make it say Hello again)
        time.sleep(1)
        r = w.parity("hosts", key="alpha")
        ok(r.returncode == 1 and "forbidden" in r.stderr,
           "parity hosts with alpha's key is forbidden")
        time.sleep(0.5)
        try:
            r = w.parity("run", "fleet", "--hosts", "alpha", "--only",
                         "startup", "--runs", "3", "--wait", timeout=20)
            rc, tail = r.returncode, r.stderr.strip()[-200:]
        except subprocess.TimeoutExpired:
            rc, tail = None, "no end within 20 s"
        ok(rc == 0, "alpha still gets and runs a job after a client spoke "
           "with its key (%s: %s)" % (rc, tail))
        for j in (w.pjson("jobs", "--active", "--json") or {}).get("jobs", []):
            w.parity("cancel", j["job"])

        # -- malformed Requests: each its exact error --------------------
        big = "A" * 60000
        cases = [
            ("hosts", "not json", "1", "args_json must be a JSON object of "
             "at most 65536 bytes"),
            ("hosts", "[1, 2]", "1", "args_json must be a JSON object"),
            ("hosts", "{" + " " * 65536 + "}", "1",
             "args_json must be a JSON object of at most 65536 bytes"),
            ("hosts", '{"x": 1}', "1", 'unknown argument "x" for hosts '
             "(known: none)"),
            ("nosuch", "{}", "2", "unknown command"),
            ("", "{}", "2", "unknown command"),
            ("job", "{}", "1", '"job" (a job id) is required'),
            ("job", '{"job": 5}', "1", '"job" must be a string'),
            ("job", '{"job": "x\'; DROP TABLE jobs; --"}', "4",
             'no job "x\'; DROP TABLE jobs; --" (parity jobs lists them)'),
            ("job", '{"job": "%s"}' % big, "4", 'no job "%s" (parity jobs '
             "lists them)" % big[:40]),
            ("jobs", '{"limit": "5"}', "1", '"limit" must be 1..1000'),
            ("jobs", '{"limit": 1e3}', "1", '"limit" must be 1..1000'),
            ("jobs", '{"active": "yes"}', "1",
             '"active" must be true or false'),
            ("jobs", '{"actve": true}', "1", 'unknown argument "actve" for '
             "jobs (known: active limit)"),
            ("cancel", '{"job": 1}', "1",
             '"job" (a job id, a string) is required'),
            ("verdicts", '{"job": 7}', "1", '"job" must be a string'),
            ("verdicts", '{"latest": "x"}', "1",
             '"latest" must be true (or give "job")'),
            ("show", '{"run": 3}', "1",
             '"run" (a run id, a string) is required'),
            ("show", '{"run": "%s"}' % ("\u00e9" * 100), "4",
             'no run "%s" (parity verdicts --json names them)' %
             ("\u00e9" * 30)),
            ("run", "{}", "1",
             '"suite" must be a non-empty string of at most 1024 bytes'),
            ("run", '{"suite": "%s"}' % ("S" * 2000), "1",
             '"suite" must be a non-empty string of at most 1024 bytes'),
            ("run", '{"suite": "fleet", "hosts": "all"}', "1",
             '"hosts" must be an array of at most 4096 strings'),
            ("run", '{"suite": "fleet", "hosts": ["%s"]}' % ("h" * 2000),
             "1", '"hosts"[0] must be a non-empty string of at most 1024 '
             "bytes"),
            ("run", '{"suite": "fleet", "tags": {"a": 1}}', "1",
             '"tags": "a" must have a non-empty key and a string value of '
             "at most 1024 bytes"),
            ("run", '{"suite": "fleet", "runs": 1}', "1",
             '"runs" must be 0 (the suite\'s), "auto" or an integer '
             '2..100000'),
            ("run", '{"suite": "fleet", "runs": 2.5}', "1",
             '"runs" must be 0 (the suite\'s), "auto" or an integer '
             '2..100000'),
            ("run", '{"suite": "fleet", "runs": 100001}', "1",
             '"runs" must be 0 (the suite\'s), "auto" or an integer '
             '2..100000'),
            ("run", '{"suite": "fleet", "expire_us": 9223372036854775807}',
             "1", '"expire_us" must be 0 (never) or an integer of '
             "microseconds up to 2592000000000 (30 days)"),
            ("run", '{"suite": "fleet", "label": 5}', "1",
             '"label" must be a string of at most 1024 bytes'),
            ("run", '{"suite": "fleet", "tag": {"commit": "abc"}}', "1",
             'unknown argument "tag" for run (known: suite hosts tags vars '
             "against runs only label expire_us)"),
        ]
        before = w.psql("SELECT count(*) FROM jobs")
        got = requests(w, [(c, a) for c, a, _, _ in cases])
        for (c, a, st, msg), (gst, gtext) in zip(cases, got):
            ok(gst == st and gtext.startswith(msg),
               "%s %s: status %s \"%s\" (got %s \"%s\")" %
               (c or '""', a[:50], st, msg[:80], gst, gtext[:120]))
        ok(w.psql("SELECT count(*) FROM jobs") == before,
           "no malformed run created a job")
        got = requests(w, [("ping", "")])
        ok(got[0] == ("0", "{}"), "the collector is alive after them")
        got = requests(w, [("hosts", "{}"), ("run", '{"suite": "fleet"}')],
                       key="stranger")
        ok(all(g == ("3", "forbidden: this client's key is not in the "
                     "collector's --admin directory") for g in got),
           "a non-admin key: forbidden, exact text: %s" % got)

        # -- --wait says whom it waits for, and that they are offline ----
        w.stop_agent("beta")
        ok(w.wait_online(["beta"], False), "beta stopped")
        p = subprocess.Popen([PARITY, "run", "fleet", "--only", "startup",
                              "--runs", "3", "--wait", "--expire", "1h"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ,
                             PARITY_COLLECTOR=w.endpoint,
                             PARITY_COLLECTOR_KEY=w.key("collector"),
                             PARITY_KEY=w.key("admin")))
        time.sleep(3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        ok("beta         queued: offline, gets the job when it comes back"
           in err and "waiting for 1 offline host: beta; the job waits "
           "until 20" in err and "(--expire); Ctrl-C stops waiting, parity "
           "cancel " in err, "run --wait names offline beta and until when "
           "the job waits: %s" % err.strip()[-300:])
        ok(p.returncode == 3 and "stopped waiting; job " in err,
           "Ctrl-C stops waiting (exit 3), the job goes on")
        jobs = w.pjson("jobs", "--active", "--json") or {"jobs": [{}]}
        for j in jobs["jobs"]:
            w.parity("cancel", j["job"])
        w.start_agent("beta")
        ok(w.wait_online(["beta"], True), "beta back")

        # -- the collector restarted in the middle of a job --------------
        for sig, name in ((signal.SIGKILL, "SIGKILL"),
                          (signal.SIGTERM, "SIGTERM")):
            env = dict(os.environ, PARITY_COLLECTOR=w.endpoint,
                       PARITY_COLLECTOR_KEY=w.key("collector"),
                       PARITY_KEY=w.key("admin"), PARITY_TIMEOUT="3")
            p = subprocess.Popen([PARITY, "run", "long", "--wait", "--runs",
                                  "25", "--json"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
            time.sleep(1)
            jobs = w.pjson("jobs", "--active", "--json") or {"jobs": [{}]}
            job = (jobs["jobs"] or [{}])[0].get("job", "?")
            ok(wait_samples(w, job, ["alpha", "beta"]),
               "%s: both hosts are in the middle of job %s" % (name, job))
            restart_collector(w, sig)
            try:
                out, err = p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            ok(p.returncode == 0, "%s: run --wait rode out the restart and "
               "exits 0 (%s: %s)" % (name, p.returncode, err.strip()[-300:]))
            v = w.pjson("verdicts", job, "--json") or {}
            hm = host_map(v)
            ok(v.get("state") == "ended" and
               all(hm.get(n, {}).get("state") == "done"
                   for n in ("alpha", "beta")),
               "%s: the job ended with both hosts done: %s" %
               (name, {k: (x["state"], x["reason"]) for k, x in hm.items()}))
            c = (v.get("comparisons") or [{}])[0]
            ok(sorted(h["host"] for h in c.get("hosts", [])
                      if "verdict" in h) == ["alpha", "beta"] and
               c.get("summary", {}).get("hosts") == 2,
               "%s: and both hosts' verdicts are in its summary" % name)

        # -- what users hit after a job: exact texts ---------------------
        r = w.parity("cancel", job)
        ok(r.returncode == 0 and r.stdout == "job %s was already ended: "
           "nothing to cancel\n" % job, "cancel of an ended job: %s" %
           r.stdout.strip())
        r = w.parity("show", "no-such-run")
        ok(r.returncode == 1 and r.stderr == "parity show: no run "
           "\"no-such-run\" (parity verdicts --json names them)\n",
           "show of an unknown run: %s" % r.stderr.strip())
        out = os.path.join(w.root, "export")
        r1 = w.parity("export", job, "--out", out)
        r2 = w.parity("export", job, "--out", out)
        ok(r1.returncode == 0 and r2.returncode == 1 and r2.stderr ==
           "parity export: %s/alpha.json exists (an earlier export?); "
           "--force overwrites it\n" % out,
           "export into a dir that has the files: refused, exit 1 as "
           "keygen's (%s)" %
           r2.stderr.strip())
        r = w.parity("export", job, "--out", out, "--force")
        ok(r.returncode == 0 and r.stdout.split() ==
           [out + "/alpha.json", out + "/beta.json"],
           "--force overwrites them and prints the paths")
        r = w.parity("export", job, "--out", out + "/alpha.json")
        ok(r.returncode == 3 and r.stderr == "parity export: --out "
           "%s/alpha.json: not a directory\n" % out,
           "--out a file: %s" % r.stderr.strip())
        r = w.parity("run", "fleet", "--hosts", "alpha", "--only", "nope")
        ok(r.returncode == 1 and r.stderr == "parity run: host \"alpha\": "
           "its suite \"fleet\" has no benchmark \"nope\"\n",
           "--only a benchmark alpha lacks: %s" % r.stderr.strip())
        r = w.parity("verdicts", job, "--csv")
        rows = r.stdout.splitlines()
        ok(r.returncode == 0 and len(rows) == 3 and
           all(len(x.split(",")) == 15 and "." in x.split(",")[-2] and
               len(x.split(",")[-2]) > 6 and x.split(",")[-1] == "wall"
               for x in rows[1:]),
           "verdicts --csv: two host lines with an unrounded geomean, of "
           "wall time")

        # -- an agent restarted at once (before it could look offline) ---
        r = w.parity("run", "long", "--hosts", "alpha", "--json")
        job = (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
        ok(wait_samples(w, job, ["alpha"]), "alpha is in the middle of job "
           "%s" % job)
        w.stop_agent("alpha", signal.SIGKILL)
        w.start_agent("alpha")
        v = w.wait_job(job, 30) or {}
        a = host_map(v).get("alpha", {})
        # Its spool tells of the cut run (RunEnd INCOMPLETE), or no
        # Heartbeat names the job within 5 intervals: lost either way.
        ok(v.get("state") == "ended" and a.get("state") == "lost" and
           (a.get("reason", "").endswith("ended incomplete: agent restarted "
                                         "during run") or
            a.get("reason") == "the agent connected again and no longer "
            "runs the job (restarted?)"),
           "alpha killed and restarted at once: its new process does not "
           "run the job, so it is lost (%s: %s)" % (a.get("state"),
                                                    a.get("reason")))
        ok(w.wait_online(["alpha"], True), "alpha online again")

        # -- an agent that never comes back after a collector restart ----
        r = w.parity("run", "long", "--hosts", "alpha", "--json")
        job = (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
        ok(wait_samples(w, job, ["alpha"]), "alpha is in the middle of job "
           "%s" % job)
        w.collector.send_signal(signal.SIGTERM)
        w.collector.wait(timeout=30)
        w.stop_agent("alpha", signal.SIGKILL)
        t0 = time.time()
        w.start_collector()
        v = w.wait_job(job, 60) or {}
        a = host_map(v).get("alpha", {})
        ok(v.get("state") == "ended" and a.get("state") == "lost" and
           a.get("reason") == "the agent went offline during the job (or "
           "did not come back after a collector restart)" and
           time.time() - t0 < 45,
           "alpha never back: lost about 30 s after the restart, the job "
           "ends (%s: %s after %.0f s)" % (a.get("state"), a.get("reason"),
                                           time.time() - t0))

        # -- a Hello, and no Heartbeat naming the job: lost in 5 beats ----
        fake = subprocess.Popen([REQUEST, "--agent", w.endpoint,
                                 w.key("collector"), w.key("stranger"),
                                 "fake", "fakesuite"], stdout=subprocess.PIPE,
                                text=True)
        ok(w.wait_online(["fake"], True), "a fake agent listing fakesuite")
        r = w.parity("run", "fakesuite", "--json")
        job = (json.loads(r.stdout) if r.returncode == 0 else {}).get("job")
        lines = [fake.stdout.readline().strip() for _ in range(2)]
        t0 = time.time()
        v = w.wait_job(job, 10) or {}
        a = host_map(v).get("fake", {})
        ok(lines == ["offer %s" % job, "again"] and
           a.get("state") == "lost" and a.get("reason") == "the agent "
           "connected again and no longer runs the job (restarted?)" and
           time.time() - t0 < 5,
           "it took the job, connected again and beat idle: lost within 5 "
           "heartbeat intervals (%s, %s: %s after %.1f s)" %
           (lines, a.get("state"), a.get("reason"), time.time() - t0))
        fake.kill()
        fake.wait()

        # -- the database stopped under the collector --------------------
        pg = os.path.join(w.data, "pg")
        ctl = pf.as_pg_owner([os.path.join(pg_bindir(), "pg_ctl"), "stop",
                              "-D", pg, "-m", "fast", "-w"])
        r = subprocess.run(ctl, capture_output=True, text=True, timeout=60)
        ok(r.returncode == 0, "pg_ctl stop of the collector's cluster (%s)" %
           r.stderr.strip())
        got = requests(w, [("hosts", "{}"), ("jobs", "{}"),
                           ("run", '{"suite": "fleet"}'),
                           ("cancel", '{"job": "abc"}'),
                           ("show", '{"run": "x"}'), ("ping", "")])
        ok(all(g[0] == "5" and g[1].startswith("database unavailable: ")
               and "  " not in g[1] for g in got[:5]),
           "database down: every query is status 5, one line, 'database "
           "unavailable: ...': %s" % got[:5])
        ok(got[5] == ("0", "{}"), "and the collector is alive")
        r = w.parity("hosts")
        ok(r.returncode == 1 and r.stderr.count("\n") == 1 and
           r.stderr.startswith("parity hosts: database unavailable: "),
           "parity hosts: one line, exit 1 (%s)" % r.stderr.strip())
        ctl[ctl.index("stop")] = "start"
        ctl += ["-l", os.path.join(w.root, "pg-restart.log")]
        if os.getuid() == 0:
            os.chmod(w.root, 0o777)   # the postgres user writes that log
        r = subprocess.run(ctl, capture_output=True, text=True, timeout=60)
        got = requests(w, [("hosts", "{}")])
        ok(r.returncode == 0 and got[0][0] == "0",
           "the database started again: the very next query is answered "
           "(%s)" % (got[0][1][:100],))
    finally:
        w.close(keep=tap.n_failed > 0)


def case_client():
    root = tempfile.mkdtemp(prefix="parity-client-")
    keys = os.path.join(root, "keys")
    for n in ("collector", "me"):
        subprocess.run([PARITY, "keygen", n, "--dir", keys],
                       capture_output=True, timeout=30)
    pub_only = os.path.join(root, "pubonly")
    shutil.copy(os.path.join(keys, "me"), pub_only)
    port = free_port()   # nothing listens there
    home = os.path.join(root, "home")
    os.makedirs(home)
    cfg_dir = os.path.join(home, ".config", "parity")

    def run(*args, env=None):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith("PARITY_") and k != "XDG_CONFIG_HOME"}
        e["HOME"] = home
        e.update(env or {})
        return subprocess.run([PARITY] + list(args), capture_output=True,
                              text=True, timeout=30, env=e)

    cfg_path = os.path.join(cfg_dir, "client.yaml")
    r = run("hosts")
    ok(r.returncode == 2 and "no collector address" in r.stderr and
       "--collector" in r.stderr and "$PARITY_COLLECTOR" in r.stderr and
       cfg_path + " does not exist" in r.stderr,
       "no setting at all: names the setting and all three places (%s)" %
       r.stderr.strip())
    addr = "tcp://127.0.0.1:%d" % port
    r = run("hosts", "--collector", addr)
    ok(r.returncode == 2 and "no collector key" in r.stderr and
       "--collector-key" in r.stderr and "PARITY_COLLECTOR_KEY" in r.stderr,
       "no collector key: says where it looked")
    r = run("hosts", env={"PARITY_COLLECTOR": addr,
                          "PARITY_COLLECTOR_KEY": os.path.join(keys,
                                                               "collector")})
    ok(r.returncode == 2 and "no own key" in r.stderr and
       "--key" in r.stderr and "$PARITY_KEY" in r.stderr,
       "no own key: says where it looked")
    good = ["--collector", addr, "--collector-key",
            os.path.join(keys, "collector"), "--key", os.path.join(keys, "me")]
    r = run("hosts", "--collector", "localhost", *good[2:])
    ok(r.returncode == 2 and "collector address from --collector" in
       r.stderr and "tcp://HOST:PORT" in r.stderr,
       "a bad address names its source (%s)" % r.stderr.strip())
    r = run("hosts", *good[:2], "--collector-key", "/nonexistent/key",
            *good[4:])
    ok(r.returncode == 2 and "collector key from --collector-key" in
       r.stderr and "/nonexistent/key" in r.stderr,
       "a missing collector key file names its source")
    r = run("hosts", *good[:4], env={"PARITY_KEY": pub_only})
    ok(r.returncode == 2 and "own key from $PARITY_KEY" in r.stderr and
       "no secret key" in r.stderr,
       "a public-only own key: says the secret is missing (%s)" %
       r.stderr.strip())
    notcert = os.path.join(root, "notcert")
    with open(notcert, "w") as f:
        f.write("hello\n")
    r = run("hosts", *good[:4], "--key", notcert)
    ok(r.returncode == 2 and "not a CURVE certificate" in r.stderr,
       "a file that is no certificate is named")
    r = run("hosts", *good, "--timeout", "1")
    ok(r.returncode == 3 and "cannot connect" in r.stderr and addr in
       r.stderr, "an unreachable collector: clear error after --timeout "
       "(%s)" % r.stderr.strip())
    # A key file whose path happens to be 40 Z85 characters is still a
    # file; and the key's Z85 text itself is accepted too.
    odd = "/tmp/pqk" + os.urandom(11).hex()
    os.makedirs(odd)
    shutil.copy(os.path.join(keys, "collector"), odd)
    odd_key = os.path.join(odd, "collector")
    r = run("hosts", *good[:2], "--collector-key", odd_key, *good[4:],
            "--timeout", "1")
    ok(len(odd_key) == 40 and r.returncode == 3 and "cannot connect" in
       r.stderr, "a 40-character key path is read as a file (%s)" %
       r.stderr.strip())
    shutil.rmtree(odd, ignore_errors=True)
    with open(os.path.join(keys, "collector")) as f:
        z85 = [l.split('"')[1] for l in f if "public-key" in l][0]
    r = run("hosts", *good[:2], "--collector-key", z85, *good[4:],
            "--timeout", "1")
    ok(r.returncode == 3 and "cannot connect" in r.stderr,
       "the collector key as Z85 text is accepted")
    r = run("hosts", *good, "--timeout", "zero")
    ok(r.returncode == 2 and "--timeout" in r.stderr, "a bad --timeout")
    # A collector that is down (nothing listens: connections refused) is
    # said within 2 s whatever the timeout, and told apart from one that
    # takes the connection and never answers (mute_server.py).
    t0 = time.time()
    r = run("hosts", *good)
    took = time.time() - t0
    ok(r.returncode == 3 and took < 2 and r.stderr == "parity hosts: cannot "
       "connect to the collector at %s: the connection is refused (is "
       "parity-collector running and listening there?)\n" % addr,
       "a collector that is down: said in %.2f s (< 2), with the default "
       "10 s timeout (%s)" % (took, r.stderr.strip()))
    mute = subprocess.Popen([sys.executable, os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "collector",
        "mute_server.py"), "20"], stdout=subprocess.PIPE, text=True)
    mute_addr = "tcp://127.0.0.1:%s" % mute.stdout.readline().strip()
    t0 = time.time()
    r = run("hosts", "--collector", mute_addr, *good[2:], "--timeout", "1")
    took = time.time() - t0
    ok(r.returncode == 3 and 1 <= took < 5 and r.stderr == "parity hosts: "
       "no answer from %s within 1.0 s: the connection was made but its "
       "handshake never finished (is it parity-collector that listens "
       "there?)\n" % mute_addr,
       "a listener that never answers: no answer after the timeout (%s)"
       % r.stderr.strip())
    # parity hosts' own arguments (enrollment), refused before connecting.
    for args, want in (
            (("approve",), "parity hosts: approve needs a key's FINGERPRINT "
             "or its host's NAME (parity hosts --pending lists them)\n"),
            (("revoke", "alpha", "--pending"), "parity hosts: --pending "
             "lists keys; revoke takes one: give either\n"),
            (("approve", "alpha", "beta"), "parity hosts: unknown argument "
             "\"beta\" (parity hosts --help)\n"),
            (("bless", "alpha"), "parity hosts: unknown argument \"bless\" "
             "(parity hosts --help)\n")):
        r = run("hosts", *args, *good, "--timeout", "1")
        ok(r.returncode == 2 and r.stderr == want,
           "parity hosts %s: %s" % (" ".join(args), r.stderr.strip()))
    r = run("hosts", "--help")
    ok(r.returncode == 0 and "approve|reject|revoke FINGERPRINT|NAME" in
       r.stdout and "--pending" in r.stdout,
       "parity hosts --help shows --pending, approve, reject, revoke")
    # The config file, with paths relative to it.
    os.makedirs(cfg_dir)
    shutil.copy(os.path.join(keys, "collector"), cfg_dir)
    shutil.copy(os.path.join(keys, "me"), cfg_dir)
    shutil.copy(os.path.join(keys, "me_secret"), cfg_dir)
    with open(cfg_path, "w") as f:
        f.write("collector: %s\ncollector_key: collector\nkey: me\n" % addr)
    t0 = time.time()
    r = run("hosts", "--timeout", "1")
    ok(r.returncode == 3 and "cannot connect" in r.stderr and
       time.time() - t0 < 10,
       "every setting from client.yaml (relative paths): it gets as far "
       "as connecting")
    # timeout: in client.yaml, below --timeout and $PARITY_TIMEOUT.
    with open(cfg_path, "w") as f:
        f.write("collector: %s\ncollector_key: collector\nkey: me\n"
                "timeout: 1.5\n" % mute_addr)
    t0 = time.time()
    r = run("hosts")
    ok(r.returncode == 3 and "within 1.5 s" in r.stderr and
       time.time() - t0 < 5, "client.yaml's timeout: is used (%s)" %
       r.stderr.strip())
    r = run("hosts", env={"PARITY_TIMEOUT": "1"})
    ok(r.returncode == 3 and "within 1.0 s" in r.stderr,
       "$PARITY_TIMEOUT wins over client.yaml's timeout (%s)" %
       r.stderr.strip())
    with open(cfg_path, "w") as f:
        f.write("collector: %s\ncollector_key: collector\nkey: me\n"
                "timeout: soon\n" % mute_addr)
    r = run("hosts")
    ok(r.returncode == 2 and r.stderr == "parity hosts: %s (timeout) "
       "\"soon\": want seconds, more than 0 and at most 3600\n" % cfg_path,
       "a bad timeout: in client.yaml names the file (%s)" %
       r.stderr.strip())
    mute.kill()
    mute.wait()
    # Flags beat the environment, which beats the file.
    with open(cfg_path, "w") as f:
        f.write("collector: localhost\ncollector_key: collector\nkey: me\n")
    r = run("hosts", "--timeout", "1",
            env={"PARITY_COLLECTOR": "tcp://127.0.0.1:%d" % port})
    ok(r.returncode == 3 and "cannot connect" in r.stderr,
       "$PARITY_COLLECTOR wins over client.yaml (%s)" % r.stderr.strip())
    r = run("hosts", "--timeout", "1", "--collector", addr,
            env={"PARITY_COLLECTOR": "localhost"})
    ok(r.returncode == 3 and "cannot connect" in r.stderr,
       "--collector wins over $PARITY_COLLECTOR (%s)" % r.stderr.strip())
    r = run("hosts")
    ok(r.returncode == 2 and r.stderr == "parity hosts: collector address "
       "from %s (collector): \"localhost\" is not tcp://HOST:PORT\n" %
       cfg_path, "a bad address in client.yaml names the file and key (%s)"
       % r.stderr.strip())
    with open(cfg_path, "w") as f:
        f.write("collector: %s\ncolector_key: x\n" % addr)
    r = run("hosts")
    ok(r.returncode == 2 and "unknown key \"colector_key\" (known: "
       "collector, collector_key, key, timeout)" in r.stderr and
       cfg_path in r.stderr, "a typo in client.yaml is named with its line")
    with open(cfg_path, "w") as f:
        f.write("collector: [a, b\n")
    r = run("hosts")
    ok(r.returncode == 2 and "is not valid" in r.stderr,
       "a broken client.yaml is named")
    os.unlink(cfg_path)
    os.makedirs(cfg_path)
    r = run("hosts")
    ok(r.returncode == 2 and r.stderr == "parity hosts: no collector address: "
       "not given by --collector, $PARITY_COLLECTOR is not set, and %s is a "
       "directory (see docs/client.md)\n" % cfg_path,
       "client.yaml a directory: %s" % r.stderr.strip())
    os.rmdir(cfg_path)
    if os.getuid() != 0:
        with open(cfg_path, "w") as f:
            f.write("collector: %s\n" % addr)
        os.chmod(cfg_path, 0)
        r = run("hosts")
        ok(r.returncode == 2 and "%s cannot be read: Permission denied" %
           cfg_path in r.stderr, "client.yaml unreadable: %s" %
           r.stderr.strip())
        os.unlink(cfg_path)
    r = run("run")
    ok(r.returncode == 2 and "which suite" in r.stderr, "run without SUITE")
    r = run("run", "x", "--expire", "soon")
    ok(r.returncode == 2 and "--expire" in r.stderr, "run --expire soon")
    for args, msg in (
            (("--tag", "nokey"), '--tag "nokey": want KEY=VALUE (a non-empty '
             "KEY of at most 1024 bytes)"),
            (("--var", "k" * 1100 + "=v"), '--var "%s": "%s" is not a '
             "variable name (letters, digits and _, not starting with a "
             "digit, at most 100 bytes)" % ("k" * 60, "k" * 60)),
            (("--var", "bad name=1"), '--var "bad name=1": "bad name" is not '
             "a variable name (letters, digits and _, not starting with a "
             "digit, at most 100 bytes)"),
            (("--var", "1x=1"), '--var "1x=1": "1x" is not a variable name '
             "(letters, digits and _, not starting with a digit, at most "
             "100 bytes)"),
            (("--var", "=1"), '--var "=1": "" is not a variable name '
             "(letters, digits and _, not starting with a digit, at most "
             "100 bytes)"),
            (("--var", "novalue"), '--var "novalue": want KEY=VALUE (a '
             "non-empty KEY of at most 1024 bytes)"),
            (sum((("--var", "v%d=1" % i) for i in range(257)), ()),
             "more than 256 --var"),
            (("--runs", "1"), '--runs "1": want auto or a whole number from '
             "2 to 100000"),
            (("--runs", "100001"), '--runs "100001": want auto or a whole '
             "number from 2 to 100000"),
            (("--expire", "31d"), '--expire "31d": want a duration such as '
             "90s, 10m, 2h, 1d (at most 30d)"),
            (("--hosts", "a,,b"), '--hosts "a,,b": want NAME,NAME,..., all '
             "or KEY=VALUE"),
            (("--against", "=c1"), '--against "=c1": want NAME=VALUE, NAME '
             "a variable name (the suite's revision variable)"),
            (sum((("--against", "commit=v%d" % i) for i in range(15)), ()),
             "more than 14 --against")):
        r = run("run", "x", *args)
        ok(r.returncode == 2 and r.stderr == "parity run: %s\n" % msg,
           "run %s: %s" % (args[0], r.stderr.strip()[:120]))
    r = run("verdicts", "--json", "--csv")
    ok(r.returncode == 2, "verdicts with two formats")
    # Every verb parses with getopt_long: a missing value, an unknown
    # option, a second operand, and --opt=value, with the same words.
    for verb, args, msg in (
            ("jobs", ("--limit",), "--limit needs a value"),
            ("jobs", ("--limit=0",), '--limit "0": want 1..1000'),
            ("jobs", ("--bogus",), 'unexpected argument "--bogus" (parity '
             "jobs --help)"),
            ("jobs", ("extra",), 'unexpected argument "extra" (parity jobs '
             "--help)"),
            ("cancel", ("a", "b"), 'unexpected argument "b" (parity cancel '
             "--help)"),
            ("cancel", ("-x", "a"), 'unexpected argument "-x" (parity '
             "cancel --help)"),
            ("show", ("a", "b"), 'unexpected argument "b" (parity show '
             "--help)"),
            ("export", ("j", "--out"), "--out needs a value"),
            ("export", ("j", "k", "--out=d"), 'unexpected argument "k" '
             "(parity export --help)"),
            ("verdicts", ("a", "b"), 'unexpected argument "b" (parity '
             "verdicts --help)"),
            ("verdicts", ("--wide",), 'unexpected argument "--wide" (parity '
             "verdicts --help)"),
            ("hosts", ("--bogus",), 'unknown argument "--bogus" (parity '
             "hosts --help)"),
            ("hosts", ("approve", "k", "more"), 'unknown argument "more" '
             "(parity hosts --help)"),
            ("history", ("b", "--tag"), "--tag needs a value"),
            ("history", ("b", "c"), 'unexpected argument "c" (parity history '
             "--help)"),
            ("run", ("x", "--runs=1"), '--runs "1": want auto or a whole '
             "number from 2 to 100000"),
            ("run", ("x", "--label"), "--label needs a value"),
            ("run", ("x", "y"), 'unexpected argument "y" (parity run '
             "--help)")):
        r = run(verb, *args)
        ok(r.returncode == 2 and r.stderr == "parity %s: %s\n" % (verb, msg),
           "%s %s: %s" % (verb, " ".join(args), r.stderr.strip()[:120]))
    for verb in ("run", "verdicts", "hosts", "jobs", "cancel", "show",
                 "export"):
        r = run(verb, "--help")
        ok(r.returncode == 0 and "usage: parity " + verb in r.stdout,
           "parity %s --help" % verb)
    shutil.rmtree(root, ignore_errors=True)


QUICK_SUITE = """suite: quick
benchmarks:
  - name: startup
    runs: 3
    warmup: 0
""" + STARTUP_ARMS

AA_METRIC = re.compile(r"^(alpha|beta): (cpu|peak_rss): \d+ false "
                       r"verdicts? in 5 A/A trials$")
AA_LINE = re.compile(r"^(alpha|beta): (warning: )?(\d+) false verdicts? in 5 "
                     r"A/A trials( \(\d+\.\d %, above 2 %\))?, floor "
                     r"\S+ \S+ \(self-test of \d{4}-\d\d-\d\d "
                     r"\d\d:\d\dZ\)$")


def selftest_errors(w):
    """Every error of parity selftest a user can hit, exact."""
    for args, rc, msg in (
            (["--trials", "0"], 2,
             '--trials "0": want a whole number from 1 to 256'),
            (["--trials", "257"], 2,
             '--trials "257": want a whole number from 1 to 256'),
            (["--trials=x"], 2,
             '--trials "x": want a whole number from 1 to 256'),
            (["--loops", "0"], 2,
             '--loops "0": want a whole number from 1 to 10000000'),
            (["--hosts", "alpha,,beta"], 2,
             '--hosts "alpha,,beta": want NAME,NAME,..., all or KEY=VALUE'),
            (["--trials"], 2, "--trials needs a value"),
            (["--runs", "3"], 2,
             'unknown option "--runs" (parity selftest --help)'),
            (["--wait=1"], 2, '"--wait=1": the option takes no value'),
            (["now"], 2,
             'unexpected argument "now" (parity selftest --help)'),
            (["--hosts", "nosuch"], 1,
             'no host is named "nosuch" (parity hosts lists them)')):
        r = w.parity("selftest", *args)
        ok(r.returncode == rc and r.stderr == "parity selftest: %s\n" % msg,
           "parity selftest %s: exit %d, %s (%d: %s)"
           % (" ".join(args), rc, msg, r.returncode, r.stderr.strip()))


def case_selftest():
    """parity selftest on two agents of one machine: each host's rate,
    floor and date in hosts, the line under a later job's verdicts, and
    the warning above 2 % (one stored verdict of beta's self-test is
    rewritten to a loss with psql: an honest A/A rarely gives one)."""
    w = World()
    try:
        with open(os.path.join(w.suites, "quick.yaml"), "w") as f:
            f.write(QUICK_SUITE)
        ok(w.start_fleet(("alpha", "beta")), "two agents are online")
        hosts = (w.pjson("hosts", "--json") or {}).get("hosts", [])
        ok(len(hosts) == 2 and all("parity-selftest" in h["suites"] and
                                   h["selftest"] is None for h in hosts),
           "every agent lists the built-in parity-selftest; no self-test "
           "yet (%s)" % [(h["suites"], h["selftest"]) for h in hosts])
        r = w.parity("run", "quick", "--wait")
        ok(r.returncode == 0 and "alpha: this host: no self-test yet "
           "(parity selftest)" in r.stdout,
           "before any self-test a verdict says so (%d: %s)"
           % (r.returncode, r.stdout[-300:]))
        selftest_errors(w)

        t0 = time.time()
        r = w.parity("selftest", "--trials", "5", "--wait", timeout=90)
        took = time.time() - t0
        lines = r.stdout.splitlines()
        more = [x for x in lines if AA_METRIC.match(x)]
        lines = [x for x in lines if not AA_METRIC.match(x)]
        m = [AA_LINE.match(x) for x in lines]
        ok(len(lines) == 2 and all(m) and {x.group(1) for x in m} ==
           {"alpha", "beta"},
           "selftest --trials 5 --wait: one result line per host (%s)"
           % r.stdout.strip())
        ok(sorted(AA_METRIC.match(x).group(1, 2) for x in more) ==
           [("alpha", "cpu"), ("alpha", "peak_rss"), ("beta", "cpu"),
            ("beta", "peak_rss")],
           "... and a line per host for each other metric, each judged on "
           "the same 5 A/A trials (%s)" % more)
        warned = {x.group(1) for x in m if x and x.group(2)}
        bad = {x.group(1): int(x.group(3)) for x in m if x}
        ok(warned == {h for h, n in bad.items() if n > 0} and
           r.returncode == (1 if warned else 0),
           "exit %d: 1 exactly when a host gave a false verdict (1 in 5 is "
           "above 2 %%: %s)" % (r.returncode, bad))
        ok(took < 60, "the self-test of 2 x 5 trials took %.1f s" % took)
        job = re.search(r"job ([0-9a-f]{12}): A/A self-test, 5 trials on 2 "
                        r"hosts", r.stderr)
        ok(job is not None, "it names its job on stderr (%s)"
           % r.stderr[:200])
        job = job.group(1) if job else ""

        # hosts: the rate, floor and date, as the stored verdicts say.
        v = w.pjson("verdicts", job, "--json") or {}
        stored = {}
        for c in v.get("comparisons", []):
            for e in c["hosts"]:
                if "verdict" in e:
                    stored.setdefault(e["host"], []).append(
                        e["verdict"]["outcome"])
        hosts = {h["name"]: h for h in
                 (w.pjson("hosts", "--json") or {}).get("hosts", [])}
        now_us = time.time() * 1e6
        for n in ("alpha", "beta"):
            st = hosts.get(n, {}).get("selftest") or {}
            nbad = sum(o != "parity" for o in stored.get(n, []))
            ok(st.get("job") == job and st.get("trials") == 5 and
               len(stored.get(n, [])) == 5 and
               st.get("false_verdicts") == nbad == bad.get(n) and
               abs(st.get("rate", -1) - nbad / 5.0) < 1e-12 and
               st.get("floor_us", 0) > 0 and
               now_us - 120e6 < st.get("at_us", 0) <= now_us,
               "hosts --json: %s's self-test is its 5 stored verdicts, %d "
               "not parity, with its floor and date (%s)" % (n, nbad, st))
        r = w.parity("hosts")
        ok(r.returncode == 0 and all(re.search(
            r"\n%s .* %d/5 \d{4}-\d\d-\d\d " % (n, bad.get(n, -1)), r.stdout)
            for n in ("alpha", "beta")),
           "parity hosts: a self-test column of false/trials and the day "
           "(%s)" % r.stdout)

        # One job per machine: alpha's and beta's trials never overlap.
        spans = {}
        for n in ("alpha", "beta"):
            out = w.psql("SELECT min(r.started_at_us) || ' ' || "
                         "max(r.ended_at_us) FROM runs r JOIN hosts h ON "
                         "h.id = r.host_id WHERE r.job_id = '%s' AND "
                         "h.name = '%s'" % (job, n)) or "0 0"
            spans[n] = [int(x) for x in out.split()]
        a, b = spans["alpha"], spans["beta"]
        ok(a[1] <= b[0] or b[1] <= a[0], "two agents of one machine ran "
           "their self-tests one after the other (%s)" % spans)

        # Force beta above 2 %: one of its stored A/A verdicts becomes a
        # loss (alpha is made clean the same way, so that the warning
        # below can only be beta's).
        w.psql("UPDATE verdicts v SET outcome = CASE WHEN v.id = (SELECT "
               "min(v2.id) FROM verdicts v2 JOIN runs r2 ON r2.id = v2.run "
               "JOIN hosts h2 ON h2.id = r2.host_id WHERE r2.job_id = '%s' "
               "AND h2.name = 'beta') THEN 'loss' ELSE 'parity' END FROM "
               "runs r WHERE r.id = v.run AND r.job_id = '%s'" % (job, job))
        r = w.parity("hosts")
        ok(r.returncode == 0 and re.search(
            r"\nwarning: beta: 1 false verdict in 5 A/A trials \(20\.0 %, "
            r"above 2 %\) \(self-test of [^)]*\); its verdicts call noise "
            r"a difference more often than the rule is built to\n", r.stdout)
           and "warning: alpha" not in r.stdout,
           "parity hosts warns about beta (20 %%), not alpha (%s)"
           % r.stdout[-400:])
        hosts = {h["name"]: h for h in
                 (w.pjson("hosts", "--json") or {}).get("hosts", [])}
        ok([x["code"] for x in hosts["beta"]["warnings"]].count("selftest")
           == 1 and all(x["code"] != "selftest"
                        for x in hosts["alpha"]["warnings"]),
           "hosts --json: beta's warnings hold one \"selftest\", alpha's "
           "none")

        # A self-test that does not end done leaves the last result
        # standing: the agents refuse an unknown variable.
        r = w.parity("run", "parity-selftest", "--var", "colour=red",
                     "--hosts", "alpha", "--wait")
        ok(r.returncode == 1 and "alpha: failed: parity-selftest: unknown "
           "variable \"colour\" (known: trials loops)" in r.stdout,
           "an agent refuses a parity-selftest variable it does not know "
           "(%d: %s)" % (r.returncode, r.stdout[-300:]))
        st = ((w.pjson("hosts", "--json") or {}).get("hosts") or [{}])[0]
        ok(st.get("name") == "alpha" and
           (st.get("selftest") or {}).get("job") == job,
           "the failed self-test leaves alpha's last result as it was (%s)"
           % st.get("selftest"))

        # A later job: every verdict's host carries the result.
        r = w.parity("run", "quick", "--wait")
        ok(r.returncode == 0 and
           "\nalpha: this host: 0 false verdicts in 5 A/A trials (self-test "
           "of " in r.stdout and "\nbeta: warning: this host: 1 false "
           "verdict in 5 A/A trials (20.0 %, above 2 %) (self-test of "
           in r.stdout, "run --wait: each host's self-test under the "
           "verdicts (%s)" % r.stdout[-400:])
        v = w.pjson("verdicts", "--latest", "--json") or {}
        sts = {h["host"]: h.get("selftest") for h in v.get("hosts", [])}
        ok(sts.get("alpha", {}).get("false_verdicts") == 0 and
           sts.get("beta", {}).get("false_verdicts") == 1 and
           sts["beta"]["rate"] == 0.2 and sts["beta"]["job"] == job,
           "verdicts --json: each host entry carries its selftest (%s)" % sts)
        r = w.parity("report", "--latest")
        ok(r.returncode == 0 and "1 false verdict in 5 A/A trials (20.0 %, "
           "above 2 %)" in r.stdout and "selftest: its last self-test gave "
           "1 false verdict in 5 A/A trials (20.0 %, above 2 %)" in r.stdout
           and "Warning: This host: 1 false verdict in 5 A/A trials" in
           r.stdout and "This host: 0 false verdicts in 5 A/A trials." in
           r.stdout, "report: the self-test column, beta's warning, and the "
           "line beside each verdict (%s)" % r.stdout[:600])
    finally:
        w.close(tap.n_failed > 0)


def calibration_windows(w, name):
    """The (from_us, to_us) of every calibration batch agent NAME logged."""
    path = os.path.join(w.root, "agent-" + name, "agent.log")
    with open(path, errors="replace") as f:
        return [(int(m.group(1)), int(m.group(2))) for m in re.finditer(
            r"event=calibration runs=\d+ from_us=(\d+) to_us=(\d+) ",
            f.read())]


def overlaps(a, b):
    """Pairs of half-open intervals, one from each list, that overlap."""
    return [(x, y) for x in a for y in b if x[0] < y[1] and y[0] < x[1]]


def handoff(w, names):
    """A job keeps the machine lock until the collector stored its runs,
    at most AG_DAEMON_HANDOFF_MS (2 s): with the collector's writer held
    (a transaction locks its batches table), the first host of a job on
    both says so and lets the other measure 2 s after its last run."""
    hold = subprocess.Popen(w.psql_cmd("")[:-2] + ["-f", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    hold.stdin.write("BEGIN;\nLOCK TABLE batches IN EXCLUSIVE MODE;\n"
                     "SELECT 'held';\n")
    hold.stdin.flush()
    if hold.stdout.readline().strip() != "held":
        bail("could not lock the batches table")
    done = []
    job = threading.Thread(target=lambda: done.append(w.parity(
        "run", "fleet", "--hosts", ",".join(names), "--wait", timeout=120)))
    job.start()
    said, end = None, time.time() + 60
    while said is None and time.time() < end:
        for n in names:
            with open(os.path.join(w.root, "agent-" + n, "agent.log"),
                      errors="replace") as f:
                m = re.search(r"event=handoff (job (\S+): .*)", f.read())
            if m:
                said = (n, m.group(1), m.group(2))
        time.sleep(0.2)
    hold.stdin.write("COMMIT;\n")
    hold.stdin.close()
    hold.wait(timeout=30)
    job.join(timeout=130)
    r = done[0] if done else None
    ok(r is not None and r.returncode == 0, "the job with the writer held "
       "ends (%s)" % (repr((r.returncode, r.stderr.strip()[-200:])) if r
                      else "no answer in 120 s"))
    if not said:
        ok(False, "an agent says it released the lock with runs unacked")
        return
    first, line, job_id = said
    ok(line == "job %s: runs not yet acked after 2000 ms; the machine "
       "lock is released" % job_id, "%s says: %s" % (first, line))
    rows = w.psql("SELECT h.name, min(s.start_unix_us), max(s.start_unix_us"
                  " + s.wall_us::bigint) FROM samples s JOIN runs r ON r.id "
                  "= s.run JOIN hosts h ON h.id = r.host_id WHERE r.job_id "
                  "= '%s' GROUP BY 1" % job_id) or ""
    span = {n: (int(a), int(b)) for n, a, b in
            (line.split("|") for line in rows.splitlines())}
    other = [n for n in names if n != first][0]
    gap = (span[other][0] - span[first][1]) / 1000.0 if len(span) == 2 \
        else None
    ok(gap is not None and gap >= 2000, "%s measured %s ms after %s's "
       "last run (the handoff: 2000 ms)" % (other, gap, first))


def case_machine():
    """Two agents on one machine: calibration batches under the machine
    lock never overlap each other, nor a job of either agent, judged by
    the runs' own start and end instants. The `long` suite sleeps: the
    machine looks quiet during it, so only the lock keeps the idle
    sibling's batches out of it."""
    w = World()
    names = ("alpha", "beta")

    def batches():
        return {n: calibration_windows(w, n) for n in names}

    def wait_batches(at_least, timeout=60):
        end = time.time() + timeout
        while time.time() < end and min(
                len(c) for c in batches().values()) < at_least:
            time.sleep(0.5)
        return batches()

    try:
        if not w.start_fleet(names, "--calibration-every", "1"):
            bail("alpha and beta did not come online")
        before = wait_batches(1)
        ok(all(before.values()), "both agents calibrate once idle: %s"
           % {n: len(c) for n, c in before.items()})
        for hosts, suite in (("beta", "long"), ("alpha", "long"),
                             ("alpha,beta", "fleet")):
            r = w.parity("run", suite, "--hosts", hosts, "--wait",
                         timeout=120)
            ok(r.returncode == 0, "job %s on %s ends (%d: %s)"
               % (suite, hosts, r.returncode, r.stderr.strip()[-200:]))
        after = wait_batches(max(len(c) for c in before.values()) + 1)
        cal = after
        ok(all(len(after[n]) > len(before[n]) for n in names),
           "both calibrate again after the jobs: %s"
           % {n: (len(before[n]), len(after[n])) for n in names})
        ok(not overlaps(cal["alpha"], cal["beta"]),
           "no batch of alpha overlaps one of beta: %s"
           % overlaps(cal["alpha"], cal["beta"])[:3])
        # A job holds the lock from before its first run to after its
        # last: its span on a host is its runs' first sample's start to
        # the last one's end.
        rows = w.psql(
            "SELECT h.name, r.job_id, min(s.start_unix_us), "
            "max(s.start_unix_us + s.wall_us::bigint + 1), count(*) "
            "FROM samples s JOIN runs r ON r.id = s.run JOIN hosts h ON "
            "h.id = r.host_id WHERE r.job_id <> '' GROUP BY 1, 2") or ""
        spans = {}
        n_samples = 0
        for line in rows.splitlines():
            name, job, lo, hi, n = line.split("|")
            spans.setdefault(name, []).append((int(lo), int(hi)))
            n_samples += int(n)
        ok(sorted(len(spans.get(n, [])) for n in names) == [2, 2],
           "two jobs' samples per host, %d samples in all" % n_samples)
        every_job = spans.get("alpha", []) + spans.get("beta", [])
        every_cal = cal["alpha"] + cal["beta"]
        ok(not overlaps(every_cal, every_job),
           "no calibration batch overlaps a job of either agent: %s"
           % overlaps(every_cal, every_job)[:3])
        ok(not overlaps(spans.get("alpha", []), spans.get("beta", [])),
           "the two agents' jobs never overlap")
        # The agents go on calibrating (every second), and a batch is
        # logged before it is stored: read both until they agree, which a
        # lost or doubled batch never lets them do.
        def logged_stored():
            return (sum(len(c) for c in batches().values()),
                    int(w.psql("SELECT count(*) FROM calibrations WHERE "
                               "n_samples = 20") or -1))
        got = logged_stored()
        end = time.time() + 15
        while got[0] != got[1] and time.time() < end:
            time.sleep(0.2)
            got = logged_stored()
        ok(got[0] == got[1], "every batch is stored once (%d logged, %d "
           "stored)" % got)
        handoff(w, names)
    finally:
        w.close(tap.n_failed > 0)


def main():
    case = sys.argv[1]
    pf.need(PARITY, *((AGENT, COLLECTOR, REQUEST)
                      if case in ("fleet", "restart", "selftest", "machine")
                      else ()))
    {"fleet": case_fleet, "client": case_client, "machine": case_machine,
     "restart": case_restart, "selftest": case_selftest}[case]()
    pf.finish()


if __name__ == "__main__":
    main()
