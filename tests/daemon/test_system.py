#!/usr/bin/env python3
"""test_system.py CASE -- the agent against a real collector (TAP).

Real processes: parity-collector with its private PostgreSQL in a fresh
temp dir, parity-agent, keys from `parity keygen`, sockets on 127.0.0.1.
Cases (one meson test each, so two can run at once):

  complete      a run's samples arrive complete; stored verdict equals
                `parity verdict` on the stored samples with the stored floor
  collector-kill kill -9 of the collector mid-run, restart: every sample
                stored exactly once (count and wall_us checksum against the
                agent's results file)
  pg-stop       PostgreSQL stopped for 20 s mid-run, started again: nothing
                lost
  agent-kill    kill -9 of the agent mid-run, restart (daemon mode): run
                stored incomplete with its reason; spooled batches arrive
  wrong-key     the agent pins a wrong collector key: nothing stored, the
                agent says how many messages remain spooled, and names both
                keys' fingerprints
  job           `parity run SUITE --wait` through the collector to a
                daemon: the job is done, its run stored with job id and
                tags, and a suite the agent did not list is not offered
  version-bytes a `versions` command printing bytes that are not UTF-8:
                the run is stored, those bytes as '?'
  valgrind      both daemons under valgrind memcheck for a small job (3
                runs): each exits 0 with 0 errors and 0 bytes definitely
                lost; skipped without valgrind
  refused       a spool holding a RunStart the collector refuses, a batch
                and the RunEnd of that run: Error 10, then Error 14 for
                each dependent; the daemon logs each and empties its
                spool instead of resending them forever

Environment: PARITY_BUILD_DIR (default: from meson), PARITY_PG_BINDIR.
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

BUILD = os.environ.get("PARITY_BUILD_DIR") or sys.argv[2]
AGENT = os.path.join(BUILD, "agent", "parity-agent")
# Overrides, e.g. an ASan agent against a normal collector.
COLLECTOR = os.environ.get("PARITY_TEST_COLLECTOR") or \
    os.path.join(BUILD, "collector", "parity-collector")
PARITY = os.environ.get("PARITY_TEST_PARITY") or \
    os.path.join(BUILD, "collector", "client", "parity")
KEYGEN = os.path.join(BUILD, "tests", "daemon", "daemon-keygen")

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import (ok, diag, bail, free_port, pg_bindir,  # noqa
                             as_pg_owner, tap)


class World(pf.World):
    """Keys for the collector, an agent on the allow-list, an impostor and
    an admin; a spool; the collector under self.wrap (valgrind)."""

    def __init__(self, name):
        super().__init__("parity-sys-%s-" % name, PARITY, COLLECTOR)
        self.spool = os.path.join(self.root, "spool")
        self.port = free_port()
        self.endpoint = "tcp://127.0.0.1:%d" % self.port
        self.children = []   # agents started here, killed at close
        # Commands put before the collector's and the daemon's (valgrind),
        # and their heartbeat interval.
        self.wrap = []
        self.heartbeat_ms = "500"
        self.collector_log = open(os.path.join(self.root, "collector.log"),
                                  "ab")
        self.keygen("collector")
        self.keygen("agent", allow=True)
        self.keygen("impostor")
        self.keygen("admin", admin=True)

    def keygen(self, name, allow=False, admin=False):
        if not os.access(PARITY, os.X_OK):
            # `parity` not built: daemon-keygen writes the same zcert files.
            diag("parity missing; using daemon-keygen")
            r = subprocess.run([KEYGEN, self.key(name)], capture_output=True,
                               text=True, timeout=30)
            if r.returncode != 0:
                bail("daemon-keygen %s: %s" % (name, r.stderr))
            for d, want in ((self.allow, allow), (self.admin, admin)):
                if want:
                    shutil.copy(self.key(name), d)
            return self.key(name)
        return super().keygen(name, allow, admin)

    def start_collector(self):
        self.collector = subprocess.Popen(
            self.wrap + self.collector_cmd("tcp://127.0.0.1:%d" % self.port,
                                           self.heartbeat_ms),
            stdout=self.collector_log, stderr=self.collector_log)
        self.wait_tcp(self.collector, self.port, self.log_tail)

    def kill_collector(self, sig=signal.SIGKILL):
        self.stop(self.collector, sig, wait=30)
        self.collector = None

    def log_tail(self, n=30):
        self.collector_log.flush()
        with open(os.path.join(self.root, "collector.log"), "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def pg(self, *args):
        return as_pg_owner([os.path.join(pg_bindir(), "pg_ctl"), "-D",
                            os.path.join(self.data, "pg")] + list(args))

    def write_suite(self, runs, sleep_s=0.002):
        return pf.write_suite(
            os.path.join(self.suites, "e2e.yaml"), "e2e",
            [{"name": "sleepers", "runs": runs, "warmup": 2, "arms": [
                {"name": "quick", "command": ["/bin/sleep", "%g" % sleep_s]},
                {"name": "slower",
                 "command": ["/bin/sleep", "%g" % (sleep_s * 1.5)]}]}])

    def agent_run(self, suite, results, collector_key="collector",
                  ack_timeout=60, extra=()):
        cmd = [AGENT, "run", suite, "--out", results,
               "--collector", self.endpoint,
               "--collector-key", self.key(collector_key),
               "--key", self.key("agent") + "_secret",
               "--spool", self.spool, "--name", "sys-test",
               "--heartbeat-ms", "500",
               "--ack-timeout", str(ack_timeout)] + list(extra)
        self.agent_log = open(os.path.join(self.root, "agent.log"), "ab")
        p = subprocess.Popen(cmd, stdout=self.agent_log,
                             stderr=subprocess.PIPE, text=True)
        self.children.append(p)
        return p

    def agent_daemon(self):
        cmd = self.wrap + [AGENT, "--collector", self.endpoint,
                           "--collector-key", self.key("collector"),
                           "--key", self.key("agent"), "--suites",
                           self.suites, "--spool", self.spool, "--name",
                           "sys-test", "--heartbeat-ms", self.heartbeat_ms]
        self.daemon_log = open(os.path.join(self.root, "daemon.log"), "ab")
        p = subprocess.Popen(cmd, stdout=self.daemon_log,
                             stderr=self.daemon_log)
        self.children.append(p)
        return p

    def spooled(self):
        if not os.path.isdir(self.spool):
            return 0
        return sum(1 for n in os.listdir(self.spool) if n.endswith(".msg"))

    def close(self, keep):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()
        if self.collector and self.collector.poll() is None:
            self.collector.send_signal(signal.SIGCONT)
        self.kill_collector(signal.SIGTERM)
        # A collector killed earlier leaves its server running.
        if os.path.exists(os.path.join(self.data, "pg", "postmaster.pid")):
            subprocess.run(self.pg("stop", "-m", "immediate", "-w"),
                           capture_output=True, timeout=60)
        self.collector_log.close()
        self.remove(keep)


def results_samples(path):
    """(count, sorted wall_us) of every sample of every kind."""
    with open(path) as f:
        doc = json.load(f)
    walls = []
    for b in doc["benchmarks"]:
        for s in b["samples"]:
            walls.append(s["wall_us"])
    return len(walls), sorted(walls), doc


def stored(w, run_filter="true"):
    """(count, distinct (run, batch_seq, idx), sorted wall_us) stored."""
    text = w.psql("SELECT count(*), count(DISTINCT (s.run, s.batch_seq, "
                  "s.idx)) FROM samples s JOIN runs r ON r.id = s.run "
                  "WHERE %s" % run_filter)
    if not text:
        return 0, 0, []
    count, distinct = (int(x) for x in text.split("|"))
    walls = w.psql("SELECT s.wall_us FROM samples s JOIN runs r ON "
                   "r.id = s.run WHERE %s ORDER BY s.wall_us" % run_filter)
    return count, distinct, [float(x) for x in walls.split()] if walls \
        else []


def check_exactly_once(w, results, label):
    n, walls, _ = results_samples(results)
    count, distinct, swalls = stored(w)
    ok(n > 0, "%s: the agent measured samples (%d)" % (label, n))
    ok(count == n, "%s: stored sample count %d equals the agent's %d"
       % (label, count, n))
    ok(distinct == count, "%s: no sample stored twice (%d distinct of %d)"
       % (label, distinct, count))
    ok(swalls == walls, "%s: stored wall_us equal the results file's "
       "(checksum %.3f vs %.3f)" % (label, sum(swalls), sum(walls)))


def check_finished(w, agent, timeout, results, label, complete=True):
    """The agent ends within timeout having got every ack (exit 0, the
    spool empty), each sample stored exactly once, and (complete) the
    run stored as complete."""
    rc, _ = finish_agent(w, agent, timeout)
    ok(rc == 0, "%s: parity-agent run exits 0 after all acks (%d)"
       % (label, rc))
    ok(w.spooled() == 0, "%s: the spool is empty" % label)
    check_exactly_once(w, results, label)
    if complete:
        ok(w.psql("SELECT status FROM runs") == "complete",
           "%s: the run is stored as complete" % label)


def finish_agent(w, agent, timeout):
    try:
        _, err = agent.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        agent.kill()
        _, err = agent.communicate()
        diag("agent timed out; stderr tail:\n" + err[-2000:])
        return -1, err
    return agent.returncode, err


def start_long_run(w, **agent_opts):
    """A run of 600 rounds under way: the collector started, the agent's
    batches being stored. (the agent, its results file)."""
    suite = w.write_suite(runs=600)
    results = os.path.join(w.root, "results.json")
    w.start_collector()
    agent = w.agent_run(suite, results, **agent_opts)
    ok(w.wait_for("SELECT count(*) > 0 FROM batches", "t", 30) == "t",
       "batches are being stored")
    return agent, results


def case_complete(w):
    suite = w.write_suite(runs=15)
    results = os.path.join(w.root, "results.json")
    w.start_collector()
    agent = w.agent_run(suite, results)
    check_finished(w, agent, 90, results, "complete")
    ok(w.psql("SELECT count(*) FROM calibrations") not in (None, "0"),
       "the session calibration is stored")
    row = w.psql("SELECT v.outcome, v.ratio, v.best_ratio, v.tolerance, "
                 "v.noise, v.best_tolerance, v.floor_us, v.subject_arm, "
                 "v.other_arm FROM verdicts v")
    ok(row is not None and row.count("|") == 8, "one verdict stored")
    if not row or row.count("|") != 8:
        return
    f = row.split("|")
    floor_us, subj, other = float(f[6]), int(f[7]), int(f[8])

    def arm(i):
        return w.psql("SELECT string_agg(wall_us::text, ',' ORDER BY "
                      "batch_seq, idx) FROM samples WHERE kind = 0 AND "
                      "arm = %d" % i)
    r = subprocess.run([PARITY, "verdict", "--a", arm(subj), "--b",
                        arm(other), "--floor-us", repr(floor_us), "--json"],
                       capture_output=True, text=True, timeout=30)
    ok(r.returncode == 0, "parity verdict on the stored samples runs")
    try:
        v = json.loads(r.stdout)
        v = v.get("verdict", v)
        if len(v) == 1 and isinstance(next(iter(v.values())), dict) \
                and "outcome" not in v:
            v = next(iter(v.values()))
    except ValueError:
        diag(r.stdout + r.stderr)
        v = {}
    ok(v.get("outcome") == f[0], "stored outcome %s equals parity "
       "verdict's %s" % (f[0], v.get("outcome")))
    for i, name in enumerate(["ratio", "best_ratio", "tolerance", "noise",
                              "best_tolerance"]):
        a, b = float(f[i + 1]), float(v.get(name, "nan"))
        ok(abs(a - b) <= 1e-9 * abs(b), "stored %s %.9g equals parity "
           "verdict's %.9g" % (name, a, b))


def case_collector_kill(w):
    agent, results = start_long_run(w)
    w.kill_collector(signal.SIGKILL)
    ok(not os.path.exists(results), "the collector was killed in the "
       "middle of the run (no results file yet)")
    ok(agent.poll() is None, "the agent keeps running without a collector")
    time.sleep(2)
    w.start_collector()
    check_finished(w, agent, 120, results, "collector kill -9")


def case_pg_stop(w):
    agent, results = start_long_run(w, ack_timeout=90)
    r = subprocess.run(w.pg("stop", "-m", "fast", "-w"), capture_output=True,
                       text=True, timeout=60)
    ok(not os.path.exists(results), "the database went down in the middle "
       "of the run (no results file yet)")
    ok(r.returncode == 0, "pg_ctl stop: %s" % (r.stderr.strip() or "ok"))
    time.sleep(20)
    ok(w.collector.poll() is None, "the collector stays up without its "
       "database")
    # The log goes inside DATA/pg: only the postgres user may write there.
    r = subprocess.run(w.pg("start", "-w", "-l",
                            os.path.join(w.data, "pg", "restart.log")),
                       capture_output=True, text=True, timeout=60)
    ok(r.returncode == 0, "pg_ctl start: %s" % (r.stderr.strip() or "ok"))
    check_finished(w, agent, 150, results, "database stopped 20 s",
                   complete=False)


def case_agent_kill(w):
    agent, results = start_long_run(w)
    # Freeze the collector so that batches pile up unacked in the spool.
    w.collector.send_signal(signal.SIGSTOP)
    time.sleep(2.5)
    ok(agent.poll() is None and not os.path.exists(results),
       "the agent is still in the middle of the run")
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    held = w.spooled()
    ok(held > 0, "unacked messages are in the spool after kill -9 (%d)"
       % held)
    w.collector.send_signal(signal.SIGCONT)
    daemon = w.agent_daemon()
    want = "incomplete|" + "agent restarted during run"
    got = w.wait_for("SELECT status || '|' || reason FROM runs", want, 60)
    ok(got == want, "the run is stored as incomplete with its reason (%s)"
       % got)
    end = time.time() + 30
    while w.spooled() > 0 and time.time() < end:
        time.sleep(0.2)
    ok(w.spooled() == 0, "the spooled batches were delivered")
    row = w.psql("SELECT r.batches, r.samples, (SELECT count(*) FROM "
                 "batches b WHERE b.run = r.id), (SELECT count(*) FROM "
                 "samples s WHERE s.run = r.id) FROM runs r")
    f = row.split("|") if row else ["-1"] * 4
    ok(f[0] == f[2] and int(f[0]) > 0, "every batch the RunEnd counts is "
       "stored (%s of %s)" % (f[2], f[0]))
    ok(f[1] == f[3], "every sample the RunEnd counts is stored (%s of %s)"
       % (f[3], f[1]))
    distinct = w.psql("SELECT count(DISTINCT (run, batch_seq, idx)) FROM "
                      "samples")
    ok(distinct == f[3], "no sample stored twice")
    # The killed `run` calibrated in its 600 rounds (no session-start
    # runs: nothing to send); the daemon calibrates once idle, in
    # batches of 20 no-op runs (agent/daemon/ag_topup.h), not at its start.
    got = w.wait_for("SELECT count(*) > 0 FROM calibrations WHERE "
                     "n_samples = 20", "t", 30)
    ok(got == "t" and w.psql("SELECT count(*) FROM calibrations WHERE "
                             "n_samples <> 20") == "0",
       "the restarted daemon's calibration batches are stored too, and "
       "they are the only Calibrations (%s)" % got)
    ok("no samples" not in w.log_tail(100000),
       "no Calibration without samples was sent (none refused)")
    w.stop(daemon, wait=30)
    ok(daemon.returncode == 0, "the daemon exits 0 on SIGTERM (%d)"
       % daemon.returncode)


def case_wrong_key(w):
    suite = w.write_suite(runs=3)
    results = os.path.join(w.root, "results.json")
    w.start_collector()
    agent = w.agent_run(suite, results, collector_key="impostor",
                        ack_timeout=4)
    rc, err = finish_agent(w, agent, 60)
    ok(rc == 3, "parity-agent run exits 3 when nothing is acked (%d)" % rc)
    ok("remain spooled" in err, "it says how many messages remain spooled")
    ok("event=collector_key_mismatch the collector at %s offers key SHA256:"
       % w.endpoint in err and "but this agent pins SHA256:" in err
       and "(--collector-key %s): refusing to talk to it" % w.key("impostor")
       in err, "and that the collector has another key than the pinned one "
       "(its key service says which)")
    diag(err.strip().splitlines()[-1] if err.strip() else "(no stderr)")
    ok(w.spooled() > 0, "the messages stay in the spool (%d)" % w.spooled())
    ok(w.psql("SELECT (SELECT count(*) FROM hosts) + (SELECT count(*) FROM "
              "runs) + (SELECT count(*) FROM samples) + (SELECT count(*) "
              "FROM calibrations)") == "0", "nothing is stored")


def case_job(w):
    w.write_suite(runs=5)
    w.start_collector()
    daemon = w.agent_daemon()
    conn = ["--collector", w.endpoint, "--collector-key",
            w.key("collector"), "--key", w.key("admin") + "_secret"]
    # Wait for the daemon's Hello (its suites) to be stored.
    ok(w.wait_for("SELECT count(*) FROM suites WHERE name = 'e2e'", "1", 30)
       == "1", "the daemon's Hello listed its suite e2e")
    r = subprocess.run([PARITY, "run", "e2e", "--tag", "commit=abc123",
                        "--label", "sys-job", "--wait"] + conn,
                       capture_output=True, text=True, timeout=90)
    ok(r.returncode == 0, "parity run e2e --wait exits 0 (%d: %s)"
       % (r.returncode, (r.stderr or r.stdout).strip()[-300:]))
    row = w.psql("SELECT r.status, r.job_id <> '', r.label, "
                 "r.tags->>'commit', (SELECT count(*) FROM samples s WHERE "
                 "s.run = r.id), r.samples FROM runs r")
    f = row.split("|") if row else []
    ok(len(f) == 6 and f[0] == "complete" and f[1] == "t",
       "the job's run is stored complete with its job id (%s)" % row)
    ok(len(f) == 6 and f[2] == "sys-job" and f[3] == "abc123",
       "label and tags of the job are kept with the run (%s)" % row)
    ok(len(f) == 6 and f[4] == f[5] and int(f[4]) > 0,
       "all the run's samples are stored (%s)" % row)
    r = subprocess.run([PARITY, "run", "not-on-this-agent"] + conn,
                       capture_output=True, text=True, timeout=30)
    ok(r.returncode != 0,
       "a suite no host listed is not run (%d: %s)"
       % (r.returncode, (r.stderr or r.stdout).strip()[-200:]))
    time.sleep(1)
    ok(w.psql("SELECT count(*) FROM runs") == "1", "no second run appeared")
    w.stop(daemon, wait=30)
    ok(daemon.returncode == 0, "the daemon exits 0 on SIGTERM")


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def fv(num, v):
    return varint(num << 3) + varint(v)


def fb(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data


def spool_file(spool, seq, body_field, body):
    """Write Envelope{version 1, seq, body} as ag_spool's file SEQ.msg."""
    env = fv(1, 1) + fv(2, seq) + fb(body_field, body)
    with open(os.path.join(spool, "%020d.msg" % seq), "wb") as f:
        f.write(b"PSPOOL1\n" + seq.to_bytes(8, "little")
                + len(env).to_bytes(4, "little")
                + (zlib.crc32(env) & 0xFFFFFFFF).to_bytes(4, "little")
                + env)


def case_refused(w):
    """What depends on a refused message is refused too."""
    w.write_suite(runs=3)
    os.makedirs(w.spool)
    run = b"refused-run"
    # RunStart without arms (refused, Error 10), its batch 0 of two
    # samples, its RunEnd: as an agent would have spooled them.
    spool_file(w.spool, 1, 13, fb(1, run) + fb(3, b"e2e")
               + fb(4, b"sleepers") + fv(8, 3))
    sample = fv(2, 0) + fv(3, 0) + b"\x29" + struct.pack("<d", 1000.0)
    spool_file(w.spool, 2, 14, fb(1, run) + fv(2, 0) + fb(3, sample)
               + fb(3, sample))
    spool_file(w.spool, 3, 15, fb(1, run) + fv(4, 1) + fv(5, 2))
    w.start_collector()
    t0 = time.time()
    daemon = w.agent_daemon()
    end = time.time() + 30
    while time.time() < end and w.spooled() > 0:
        time.sleep(0.1)
    took = time.time() - t0
    ok(w.spooled() == 0, "the spool empties (%d left after %.1f s: no "
       "resend wait of 5 s was needed)" % (w.spooled(), took))
    time.sleep(1.0)   # the log lines after the last removal
    w.daemon_log.flush()
    with open(os.path.join(w.root, "daemon.log")) as f:
        log = f.read()
    dep = ("depends on run_start refused-run, which was refused: "
           "run_start refused-run: no arms")
    ok("collector refused seq 1 (code 10): run_start refused-run: no arms; "
       "removed from the spool" in log, "the RunStart: Error 10, logged "
       "and removed from the spool")
    ok("collector refused seq 2 (code 14): batch refused-run/0 " + dep
       + "; removed from the spool" in log,
       "its batch: Error 14 naming the refused RunStart, logged, removed")
    ok("collector refused seq 3 (code 14): run_end refused-run " + dep
       + "; removed from the spool" in log,
       "its RunEnd: Error 14 the same way, logged, removed")
    ok(all(log.count("refused seq %d " % q) == 1 for q in (1, 2, 3)),
       "each was answered once (no resend)")
    ok(w.psql("SELECT count(*) FROM runs") == "0"
       and w.psql("SELECT count(*) FROM refusals") == "1",
       "nothing of the run is stored; one refusal is remembered")
    ok(daemon.poll() is None, "the daemon keeps running")
    w.stop(daemon, wait=30)
    ok(daemon.returncode == 0, "the daemon exits 0 on SIGTERM")
    if tap.n_failed:
        diag("daemon log:\n" + log[-3000:])


def valgrind_summary(path):
    """(errors, definitely lost bytes) from a memcheck log, or None."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    errors = re.findall(r"ERROR SUMMARY: ([\d,]+) errors", text)
    lost = re.findall(r"definitely lost: ([\d,]+) bytes", text)
    if not errors:
        return None
    n = int(errors[-1].replace(",", ""))
    return n, int(lost[-1].replace(",", "")) if lost else 0


def case_valgrind(w):
    """Both daemons under memcheck for a small job: no error, no
    definite leak (sanitizers)."""
    supp = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "valgrind.supp")
    logs = os.path.join(w.root, "vg-%s.log")
    w.heartbeat_ms = "1000"   # memcheck is ~20x slower: no false offline
    w.write_suite(runs=3)

    def vg(name):
        return ["valgrind", "--tool=memcheck", "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "--show-leak-kinds=definite", "--error-exitcode=99",
                "--child-silent-after-fork=yes", "--num-callers=30",
                "--suppressions=" + supp, "--log-file=" + logs % name]
    t0 = time.time()
    w.wrap = vg("collector")
    w.start_collector()
    w.wrap = vg("agent")
    daemon = w.agent_daemon()
    w.wrap = []
    conn = ["--collector", w.endpoint, "--collector-key",
            w.key("collector"), "--key", w.key("admin") + "_secret"]
    ok(w.wait_for("SELECT count(*) FROM suites WHERE name = 'e2e'", "1", 40)
       == "1", "under memcheck the daemon's Hello is stored")
    r = subprocess.run([PARITY, "run", "e2e", "--wait"] + conn,
                       capture_output=True, text=True, timeout=60)
    ok(r.returncode == 0, "parity run e2e --wait exits 0 (%d: %s)"
       % (r.returncode, (r.stderr or r.stdout).strip()[-300:]))
    ok(w.psql("SELECT status FROM runs") == "complete"
       and w.psql("SELECT count(*) FROM verdicts") == "1",
       "the run is stored complete with its verdict")
    w.stop(daemon, wait=30)
    collector = w.collector
    w.kill_collector(signal.SIGTERM)
    took = time.time() - t0
    for name, rc in (("agent", daemon.returncode),
                     ("collector", collector.returncode)):
        summary = valgrind_summary(logs % name)
        ok(rc == 0, "parity-%s exits 0 under memcheck (%s; 99 is "
           "memcheck's --error-exitcode)" % (name, rc))
        ok(summary == (0, 0), "parity-%s: 0 errors, 0 bytes definitely "
           "lost (errors, bytes: %s)" % (name, summary))
        if summary != (0, 0) or rc != 0:
            with open(logs % name) as f:
                diag(f.read()[-6000:])
    ok(took < 90, "the whole case took %.0f s (< 90)" % took)


def case_version_bytes(w):
    """A `versions` output that is not UTF-8 does not lose the run."""
    suite = os.path.join(w.suites, "bytes.yaml")
    with open(suite, "w") as f:
        # Latin-1 e-acute, then a UTF-8 e-acute cut after its first byte.
        f.write("suite: bytes\n"
                "benchmarks:\n"
                "  - name: b\n"
                "    runs: 3\n"
                "    warmup: 0\n"
                "    versions: [\"printf 'caf\\\\351 x\\\\303'\"]\n"
                "    arms:\n"
                "      - name: one\n"
                "        command: [/bin/true]\n"
                "      - name: two\n"
                "        command: [/bin/true]\n")
    results = os.path.join(w.root, "results.json")
    w.start_collector()
    agent = w.agent_run(suite, results)
    rc, err = finish_agent(w, agent, 60)
    ok(rc == 0, "parity-agent run exits 0 (%d: %s)" % (rc, err[-300:]))
    ok(w.spooled() == 0, "the spool is empty")
    ok(w.psql("SELECT status FROM runs") == "complete",
       "the run is stored complete (its RunStart was not refused)")
    ok(w.psql("SELECT DISTINCT version_output FROM arms") == "caf? x?",
       "the version output is stored with each byte that is not UTF-8 "
       "as '?' (%r)" % w.psql("SELECT DISTINCT version_output FROM arms"))
    ok(w.psql("SELECT count(*) FROM refusals") == "0", "nothing refused")


CASES = {
    "version-bytes": case_version_bytes,
    "valgrind": case_valgrind,
    "refused": case_refused,
    "job": case_job,
    "complete": case_complete,
    "collector-kill": case_collector_kill,
    "pg-stop": case_pg_stop,
    "agent-kill": case_agent_kill,
    "wrong-key": case_wrong_key,
}


def run_cases(prog, cases, make, before=None):
    """main() of a daemon test of named cases: argv[1] names the case
    (before(case) may skip it), make(case) builds its fixture (a World,
    or an object with .w and .logs); on a failure the tails of the
    collector's log and of .logs; the World closed in any case (kept
    with PARITY_KEEP)."""
    if len(sys.argv) < 2 or sys.argv[1] not in cases:
        bail("usage: %s CASE BUILD_DIR; cases: %s"
             % (prog, ", ".join(cases)))
    pf.need(AGENT, COLLECTOR, PARITY)
    if before:
        before(sys.argv[1])
    f = make(sys.argv[1])
    w = getattr(f, "w", f)
    try:
        cases[sys.argv[1]](f)
    finally:
        if tap.n_failed:
            diag("collector log tail:\n" + w.log_tail())
            for log in getattr(f, "logs", []):
                with open(log, errors="replace") as fh:
                    diag("%s tail:\n%s" % (log, fh.read()[-2500:]))
        w.close(keep=tap.n_failed > 0 and bool(os.environ.get("PARITY_KEEP")))
    pf.finish()


def valgrind_ready(case):
    """The valgrind case runs on a normal build with valgrind installed:
    else it is skipped, saying why."""
    if case != "valgrind":
        return
    if not shutil.which("valgrind"):
        print("1..0 # SKIP valgrind is not installed (Debian package "
              "valgrind; deploy/install.sh names it)", flush=True)
        sys.exit(0)
    ldd = subprocess.run(["ldd", COLLECTOR, AGENT], capture_output=True,
                         text=True, timeout=30).stdout
    if "libasan" in ldd or "libtsan" in ldd or "libubsan" in ldd:
        # A sanitizer's runtime and memcheck cannot share a process.
        print("1..0 # SKIP a sanitized build (memcheck runs on the "
              "normal one)", flush=True)
        sys.exit(0)


if __name__ == "__main__":
    run_cases("test_system.py", CASES, World, valgrind_ready)
