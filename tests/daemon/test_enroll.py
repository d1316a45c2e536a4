#!/usr/bin/env python3
"""test_enroll.py CASE BUILD_DIR -- enrolling real agents (TAP).

Real processes, as in test_system.py (whose World this reuses): one
parity-collector with its private PostgreSQL, parity-agent daemons and
runs, the `parity` client with an --admin key, 127.0.0.1 only.

  pending      `parity-agent --enroll` makes the key pair, pins the
               collector by its fingerprint (fetching and keeping its key)
               and is pending; `parity hosts --pending` shows its name and
               the fingerprint `parity-agent --fingerprint` prints; a run
               streamed with the pending key stores nothing and stays
               spooled, a daemon on that spool gets no job; `parity hosts
               approve` with the daemon still connected: the spool (the
               run, the calibrations) arrives exactly once, without a
               restart, and the host runs a job
  revoke       an agent of --allow running a job is revoked: its job row
               fails with the reason, the job ends, the agent stops the
               job, nothing more is stored, its next handshakes (also as a
               client) are refused, `parity hosts` says revoked; approved
               again, it is back without a restart
  fingerprint  a wrong --collector-fingerprint: --enroll refuses naming
               both fingerprints, a daemon logs it and sends nothing; a
               key file that contradicts the pin; trust on first use keeps
               the first key and refuses a collector with another one;
               --key-service off: the fetch fails, saying why

Environment: PARITY_BUILD_DIR (default: from meson), PARITY_PG_BINDIR.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_system as ts  # noqa: E402  (World, ok, diag, bail; reads argv[2])

ok, diag, bail = ts.ok, ts.diag, ts.bail
AGENT, COLLECTOR, PARITY = ts.AGENT, ts.COLLECTOR, ts.PARITY


class Enroll:
    """The World plus enrolling helpers."""

    def __init__(self, case):
        # World's port has its next one free too (the key service's).
        self.w = ts.World("enroll-" + case)
        self.ak = os.path.join(self.w.root, "agentkeys")
        os.makedirs(self.ak)
        self.logs = []

    def start(self, key="collector", extra=()):
        w = self.w
        w.collector = subprocess.Popen(
            [COLLECTOR, "--data-dir", w.data, "--bind", w.endpoint, "--key",
             w.key(key) + "_secret", "--allow", w.allow, "--admin", w.admin,
             "--heartbeat-ms", "500"] + list(extra),
            stdout=w.collector_log, stderr=w.collector_log)
        end = time.time() + 60
        while time.time() < end:
            if w.collector.poll() is not None:
                bail("parity-collector exited %d; log:\n%s"
                     % (w.collector.returncode, w.log_tail()))
            if "event=listening" in self.collector_log():
                return
            time.sleep(0.1)
        bail("parity-collector not listening after 60 s")

    def restart(self, key="collector", extra=()):
        self.w.kill_collector(signal.SIGTERM)
        with open(os.path.join(self.w.root, "collector.log"), "ab") as f:
            f.write(b"---- restart\n")
        self.start(key, extra)

    def collector_log(self):
        self.w.collector_log.flush()
        with open(os.path.join(self.w.root, "collector.log"), "rb") as f:
            text = f.read().decode(errors="replace")
        return text.rsplit("---- restart\n", 1)[-1]

    def fingerprint(self, key="collector"):
        r = subprocess.run([COLLECTOR, "--fingerprint", "--key",
                            self.w.key(key) + "_secret"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    def parity(self, *args, key="admin", timeout=60):
        return subprocess.run(
            [PARITY] + list(args) + ["--collector", self.w.endpoint,
                                     "--collector-key",
                                     self.w.key("collector"), "--key",
                                     self.w.key(key) + "_secret"],
            capture_output=True, text=True, timeout=timeout)

    def agent(self, *args, timeout=60):
        return subprocess.run([AGENT] + list(args), capture_output=True,
                              text=True, timeout=timeout)

    def conn(self, key, spool, pin=None, ckey=None, extra=()):
        """The connection options of an agent with key (in agentkeys/)."""
        out = ["--collector", self.w.endpoint, "--key",
               os.path.join(self.ak, key), "--spool",
               os.path.join(self.w.root, spool), "--heartbeat-ms", "500"]
        if pin:
            out += ["--collector-fingerprint", pin]
        if ckey:
            out += ["--collector-key", ckey]
        return out + list(extra)

    def daemon(self, name, args):
        log = os.path.join(self.w.root, "daemon-%s.log" % name)
        f = open(log, "ab")
        p = subprocess.Popen([AGENT] + args + ["--suites", self.w.suites,
                                               "--name", name],
                             stdout=f, stderr=f)
        f.close()
        self.w.children.append(p)
        self.logs.append(log)
        return p, log

    def wait_log(self, path, text, timeout):
        end = time.time() + timeout
        while time.time() < end:
            with open(path, errors="replace") as f:
                if text in f.read():
                    return True
            time.sleep(0.2)
        return False

    def stored_nothing(self):
        return self.w.psql("SELECT (SELECT count(*) FROM hosts) + (SELECT "
                           "count(*) FROM runs) + (SELECT count(*) FROM "
                           "samples) + (SELECT count(*) FROM calibrations)")

    def spooled(self, spool):
        d = os.path.join(self.w.root, spool)
        return sum(1 for n in os.listdir(d) if n.endswith(".msg")) \
            if os.path.isdir(d) else 0


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def case_pending(e):
    w = e.w
    suite = w.write_suite(runs=15)
    e.start()
    cfp = e.fingerprint()
    ok(cfp.startswith("SHA256:") and len(cfp) == 50,
       "parity-collector --fingerprint: %s" % cfp)
    kept = os.path.join(e.ak, "collector.pub")
    r = e.agent("--enroll", *e.conn("agent", "spool", pin=cfp, ckey=kept,
                                    extra=["--name", "enrolled"]))
    afp = e.agent("--fingerprint", "--key",
                  os.path.join(e.ak, "agent")).stdout.strip()
    ok(r.returncode == 0 and afp.startswith("SHA256:")
       and ("pending: this agent's key %s waits for an operator's approval "
            "on the collector at %s." % (afp, w.endpoint)) in r.stdout
       and "parity hosts approve %s" % afp in r.stdout,
       "--enroll makes the key and says it is pending, with the fingerprint "
       "--fingerprint prints (%d: %s)" % (r.returncode,
                                          (r.stdout + r.stderr)[-400:]))
    ok(os.stat(os.path.join(e.ak, "agent_secret")).st_mode & 0o777 == 0o600,
       "the secret key is 0600")
    pub = [ln for ln in open(w.key("collector")) if "public-key" in ln]
    ok(os.path.exists(kept) and [ln for ln in open(kept)
                                 if "public-key" in ln] == pub,
       "the collector's key, fetched and matching the pinned fingerprint, "
       "is kept in --collector-key")
    ok("event=collector_key the collector at %s has key %s (the pinned "
       "fingerprint); kept in %s" % (w.endpoint, cfp, kept) in r.stderr,
       "and the agent says so")
    r = e.parity("hosts", "--pending", "--json")
    try:
        pend = json.loads(r.stdout)["pending"]
    except (ValueError, KeyError):
        pend = []
    ok(len(pend) == 1 and pend[0]["fingerprint"] == afp
       and pend[0]["name"] == "enrolled"
       and pend[0]["address"] == "127.0.0.1",
       "parity hosts --pending lists it: name, fingerprint, address (%s)"
       % r.stdout.strip())
    r = e.parity("hosts", "--pending")
    ok(r.returncode == 0 and afp in r.stdout and "enrolled" in r.stdout
       and "parity hosts approve FINGERPRINT" in r.stdout,
       "and as a table, with how to approve")

    # A pending key's data: nothing stored, all of it spooled.
    results = os.path.join(w.root, "results.json")
    r = e.agent("run", suite, "--out", results,
                *e.conn("agent", "spool", ckey=kept,
                        extra=["--name", "enrolled", "--ack-timeout", "4"]),
                timeout=120)
    ok(r.returncode == 3 and "remain spooled" in r.stderr,
       "a run streamed with the pending key: exit 3, its messages remain "
       "spooled (%d)" % r.returncode)
    ok("event=pending pending: this key (%s) waits for an operator's "
       "approval" % afp in r.stderr, "the agent logs event=pending")
    spooled = e.spooled("spool")
    ok(spooled > 0 and e.stored_nothing() == "0",
       "nothing stored, %d messages spooled" % spooled)

    # A daemon on that spool stays pending and gets no job.
    d, dlog = e.daemon("enrolled", e.conn("agent", "spool", ckey=kept))
    ok(e.wait_log(dlog, "event=pending", 20), "the daemon is pending too")
    time.sleep(1.5)
    ok(e.stored_nothing() == "0", "still nothing stored")
    r = e.parity("run", "e2e")
    ok(r.returncode != 0, "a pending agent gets no job (%d: %s)"
       % (r.returncode, r.stderr.strip()))

    # Approval while the daemon is connected: the spool arrives once.
    r = e.parity("hosts", "approve", afp)
    ok(r.returncode == 0 and "approved %s (enrolled): its agent's next Hello "
       "is accepted, and its spooled data follows" % afp in r.stdout,
       "parity hosts approve FINGERPRINT: %s" % r.stdout.strip())
    end = time.time() + 30
    while time.time() < end and (e.spooled("spool") or
                                 w.psql("SELECT status FROM runs")
                                 != "complete"):
        time.sleep(0.3)
    ok(e.spooled("spool") == 0, "the daemon's spool is empty")
    ts.check_exactly_once(w, results, "refused while pending, then approved")
    ok(w.psql("SELECT status FROM runs") == "complete",
       "the run is stored complete")
    # The run's calibration, and the daemon's batches of 20 no-op runs
    # taken while it waited (idle, after its first seconds and once the
    # machine was quiet: on a busy one maybe none yet).
    cal = w.psql("SELECT count(*) - count(DISTINCT calibration_id), "
                 "count(*) FILTER (WHERE n_samples <> 20) FROM calibrations")
    ok(cal == "0|1", "the run's calibration and the daemon's batches "
       "stored once each (duplicates|not batches: %s)" % cal)
    ok(d.poll() is None and open(dlog).read().count("event=start ") == 1
       and e.wait_log(dlog, "event=approved the collector accepts this "
                      "agent's key now; sending the spool", 1),
       "without a restart of the daemon")
    r = e.parity("run", "e2e", "--wait", timeout=120)
    ok(r.returncode == 0, "the approved host runs a job (%d: %s)"
       % (r.returncode, r.stderr.strip()[-200:]))
    ok(stop(d) == 0, "the daemon exits 0 on SIGTERM")


def case_revoke(e):
    w = e.w
    w.write_suite(runs=600)
    e.start()
    # "agent" is in --allow: approved by its file.
    os.symlink(w.key("agent"), os.path.join(e.ak, "agent"))
    os.symlink(w.key("agent") + "_secret", os.path.join(e.ak,
                                                        "agent_secret"))
    d, dlog = e.daemon("sys-test", e.conn("agent", "spool",
                                          ckey=w.key("collector")))
    # Its suite file, beside the built-in parity-selftest every agent
    # offers.
    ok(w.wait_for("SELECT count(*) FROM host_suites WHERE name <> "
                  "'parity-selftest'", "1", 30) == "1",
       "the daemon of a key in --allow is a host")
    r = e.parity("run", "e2e")
    job = r.stdout.split()[1].rstrip(":") if r.stdout.startswith("job ") \
        else ""
    ok(r.returncode == 0 and job, "a long job starts (%s)" % job)
    ok(w.wait_for("SELECT count(*) > 0 FROM batches", "t", 30) == "t",
       "its batches are being stored")
    r = e.parity("hosts", "revoke", "sys-test")
    afp = e.agent("--fingerprint", "--key", w.key("agent")).stdout.strip()
    ok(r.returncode == 0 and "revoked %s (sys-test): refused from now on; 1 "
       "job row(s) failed" % afp in r.stdout,
       "parity hosts revoke NAME during the job: %s" % r.stdout.strip())
    row = w.psql("SELECT h.state, h.reason FROM job_hosts h JOIN jobs j ON "
                 "j.id = h.job WHERE j.job_uuid = '%s'" % job)
    ok(row == "failed|the host's key was revoked (parity hosts revoke)",
       "its job row: failed, saying why (%s)" % row)
    ok(w.wait_for("SELECT state FROM jobs WHERE job_uuid = '%s'" % job,
                  "ended", 10) == "ended", "and the job ends")
    ok(e.wait_log(dlog, "event=denied denied: this key (%s) was rejected or "
                  "revoked by an operator of the collector" % afp, 10),
       "the agent is told at once (Error 21)")
    ok(e.wait_log(dlog, "event=jobs_stopped the collector refused this "
                  "agent's key: job %s cancelled" % job, 10),
       "and stops the job")
    n1 = w.psql("SELECT count(*) FROM samples")
    time.sleep(3)
    ok(w.psql("SELECT count(*) FROM samples") == n1,
       "nothing more is stored (%s samples)" % n1)
    ok(e.wait_log(os.path.join(w.root, "collector.log"),
                  "was revoked (parity hosts)", 15),
       "its next handshake is refused (auth_denied ... was revoked)")
    ok(e.wait_log(dlog, "event=peer_gone the collector refuses this agent's "
                  "key at the handshake (not in its --allow, rejected or "
                  "revoked by an operator)", 20),
       "and the agent says why it gets no answer")
    r = e.parity("hosts")
    ok(r.returncode == 0 and "revoked" in r.stdout,
       "parity hosts shows it revoked")
    r = e.parity("hosts", key="agent", timeout=30)
    ok(r.returncode == 3 and "refused this client's key" in r.stderr
       and "(own key from --key): it is not in the collector's --allow or "
       "--admin directory, or an operator revoked or rejected it (parity "
       "hosts)" in r.stderr,
       "its key as a client is refused at the handshake too: %s"
       % r.stderr.strip())
    r = e.parity("run", "e2e")
    ok(r.returncode != 0, "no new job goes to it (%d)" % r.returncode)
    r = e.agent("--enroll", *e.conn("agent", "spool-e",
                                    ckey=w.key("collector"),
                                    extra=["--ack-timeout", "10"]))
    ok(r.returncode == 1 and "parity-agent: the collector at %s refuses "
       "this agent's key %s at the handshake: an operator rejected or "
       "revoked it (parity hosts approve %s there admits it again), or the "
       "collector runs with --enroll off and the key is not in its --allow "
       "directory" % (w.endpoint, afp, afp) in r.stderr,
       "--enroll with the revoked key: exit 1, saying so (%d: %s)"
       % (r.returncode, r.stderr.strip().splitlines()[-1:]))
    r = e.parity("hosts", "approve", "sys-test")
    ok(r.returncode == 0 and "approved %s (sys-test)" % afp in r.stdout,
       "approved again: %s" % r.stdout.strip())
    end = time.time() + 40
    while time.time() < end and open(dlog).read().count(
            "event=hello_acked") < 2:
        time.sleep(0.3)
    ok(open(dlog).read().count("event=hello_acked") >= 2 and d.poll() is None,
       "the same daemon is back (its Hello acked again)")
    r = e.agent("--enroll", *e.conn("agent", "spool-e",
                                    ckey=w.key("collector")))
    ok(r.returncode == 0 and r.stdout == "approved: the collector at %s "
       "accepts this agent's key %s\n" % (w.endpoint, afp),
       "--enroll with the approved key: %s" % r.stdout.strip())
    ok(stop(d) == 0, "the daemon exits 0 on SIGTERM")


def case_fingerprint(e):
    w = e.w
    e.start()
    cfp = e.fingerprint()
    wrong = "SHA256:" + "A" * 43
    kept = os.path.join(e.ak, "collector.pub")
    r = e.agent("--enroll", *e.conn("agent", "spool", pin=wrong, ckey=kept,
                                    extra=["--ack-timeout", "10"]))
    want = ("parity-agent: the collector at %s offers key %s, but this agent "
            "pins %s (--collector-fingerprint): refusing to talk to it"
            % (w.endpoint, cfp, wrong))
    ok(r.returncode == 1 and want in r.stderr,
       "--enroll with a wrong fingerprint: exit 1 naming both (%d: %s)"
       % (r.returncode, r.stderr.strip().splitlines()[-1:]))
    ok(not os.path.exists(kept), "the key it refused is not kept")
    ok(w.psql("SELECT count(*) FROM host_keys") == "0",
       "and the collector heard nothing from it")
    d, dlog = e.daemon("wrong", e.conn("agent", "spool2", pin=wrong))
    ok(e.wait_log(dlog, "event=collector_key_mismatch the collector at %s "
                  "offers key %s, but this agent pins %s" % (w.endpoint, cfp,
                                                             wrong), 20),
       "a daemon with the wrong fingerprint logs the mismatch")
    time.sleep(1)
    ok(w.psql("SELECT count(*) FROM host_keys") == "0"
       and e.stored_nothing() == "0", "and sends nothing")
    ok(d.poll() is None, "it keeps trying (the collector may be the wrong "
       "one for a while)")
    stop(d)
    r = e.agent("--enroll", *e.conn("agent", "spool", pin=wrong,
                                    ckey=w.key("collector")))
    ok(r.returncode == 2 and "--collector-key %s holds key %s, but "
       "--collector-fingerprint pins %s" % (w.key("collector"), cfp, wrong)
       in r.stderr, "a key file that is not the pinned collector: exit 2 "
       "naming both")

    # A key that cannot be kept is used all the same.
    nowhere = os.path.join(w.root, "nodir", "collector.pub")
    r = e.agent("--enroll", *e.conn("agent", "spool", pin=cfp,
                                    ckey=nowhere))
    ok(r.returncode == 0 and "pending:" in r.stdout
       and "event=collector_key_not_kept cannot write %s: No such file or "
       "directory: the key is used, but the next start fetches it again"
       % nowhere in r.stderr,
       "a --collector-key that cannot be written: used, and said (%d)"
       % r.returncode)

    # Trust on first use: the first key is kept, then pinned.
    tofu = os.path.join(e.ak, "tofu.pub")
    r = e.agent("--enroll", "--trust-first-use",
                *e.conn("agent", "spool", ckey=tofu))
    ok(r.returncode == 0 and "pending:" in r.stdout
       and "(trusted on first use); kept in %s" % tofu in r.stderr,
       "--trust-first-use: the first key is trusted and kept (%d)"
       % r.returncode)
    pub = [ln for ln in open(w.key("collector")) if "public-key" in ln]
    ok([ln for ln in open(tofu) if "public-key" in ln] == pub,
       "the kept key is the collector's")
    w.keygen("collector2")
    e.restart(key="collector2")
    nfp = e.fingerprint("collector2")
    r = e.agent("--enroll", "--trust-first-use",
                *e.conn("agent", "spool", ckey=tofu,
                        extra=["--ack-timeout", "20"]), timeout=60)
    want = ("parity-agent: the collector at %s offers key %s, but this agent "
            "pins %s (--collector-key %s): refusing to talk to it"
            % (w.endpoint, nfp, cfp, tofu))
    ok(r.returncode == 1 and want in r.stderr,
       "a collector with another key afterwards is refused, naming both "
       "(%d: %s)" % (r.returncode, r.stderr.strip().splitlines()[-1:]))

    # No key service: the fetch fails and says why.
    e.restart(extra=["--key-service", "off"])
    r = e.agent("--enroll", *e.conn("agent", "spool3", pin=cfp,
                                    extra=["--ack-timeout", "4"]))
    ok(r.returncode == 1 and "event=key_fetch_failed no answer from the "
       "collector's key service at tcp://127.0.0.1:%d within 2000 ms (is "
       "the collector up, with --key-service on, and that port open?)"
       % (w.port + 1) in r.stderr and "no answer from the collector at %s "
       "within 4 s" % w.endpoint in r.stderr,
       "--key-service off: the fetch fails, saying why (%d)" % r.returncode)


CASES = {
    "pending": case_pending,
    "revoke": case_revoke,
    "fingerprint": case_fingerprint,
}


if __name__ == "__main__":
    ts.run_cases("test_enroll.py", CASES, Enroll)
