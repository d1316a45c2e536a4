"""parity_fixtures -- what the Python system tests share.

TAP output (ok, skip, diag, bail, plan, finish), a temp dir removed
when all passed (tempdir), the programs a test needs (need), stopping processes (stop, stop_all), a free TCP port,
`parity compare --json` (compare_json), suite files (write_suite),
PostgreSQL's tools (pg_bindir,
as_pg_owner) and World: a temp dir with keys made by
`parity keygen`, an allow-list, an admin directory, a suites directory,
and one parity-collector with its private PostgreSQL, read with psql.

tests/jobs, tests/daemon and tests/netns subclass World with their own
agents; a test adds this folder to sys.path and imports what it uses:

    sys.path.insert(0, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "helpers"))
    from parity_fixtures import World, ok, diag, bail, tap
"""
import atexit
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Tap:
    """The counts of one TAP stream (one process)."""

    def __init__(self):
        self.n_tests = 0
        self.n_failed = 0


tap = Tap()

# Agents on one machine share its machine lock (agent/daemon/ag_machine.h,
# default /run/lock/parity-machine.lock). Tests run side by side, and
# each test's agents stand for a machine of their own: one lock file per
# test process, unless the test names one.
if not os.environ.get("PARITY_MACHINE_LOCK"):
    os.environ["PARITY_MACHINE_LOCK"] = os.path.join(
        tempfile.gettempdir(), "parity-machine-test-%d.lock" % os.getpid())


def ok(cond, what, detail=None, tail=False):
    """One TAP line; on failure also the first 30 lines of detail (the
    last 30 with tail: where a long log says what went wrong)."""
    tap.n_tests += 1
    what = " ".join(str(what).split())   # one TAP line
    print(("ok %d - %s" if cond else "not ok %d - %s") % (tap.n_tests, what),
          flush=True)
    if not cond:
        tap.n_failed += 1
        if detail is not None:
            lines = str(detail).splitlines()
            for line in lines[-30:] if tail else lines[:30]:
                print("# " + line, flush=True)
    return cond


def skip(what, reason):
    """A TAP line for a check that cannot run here, and why."""
    tap.n_tests += 1
    print("ok %d - %s # SKIP %s" % (tap.n_tests, what, reason), flush=True)


def diag(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


def bail(text):
    print("Bail out! " + text, flush=True)
    sys.exit(1)


def plan():
    """The plan line; the exit status TAP harnesses read (1 when a check
    failed), for a main() that returns it."""
    print("1..%d" % tap.n_tests, flush=True)
    return 1 if tap.n_failed else 0


def built(*paths):
    """The programs at paths ("agent/parity-agent") in the build
    directory argv[1] names."""
    return [os.path.join(sys.argv[1], *p.split("/")) for p in paths]


def need(*programs):
    """Bail out unless every one of programs is built (executable)."""
    for p in programs:
        if not os.access(p, os.X_OK):
            bail("%s is not built" % p)


def finish():
    """The plan line, and exit with the status TAP harnesses read."""
    lock = os.environ.get("PARITY_MACHINE_LOCK", "")
    if lock.endswith("-test-%d.lock" % os.getpid()):
        try:
            os.unlink(lock)
        except OSError:
            pass
    sys.exit(plan())


def tempdir(prefix):
    """A new temp dir, removed at exit when every check passed (kept,
    and named, for a look when one failed)."""
    path = tempfile.mkdtemp(prefix=prefix)

    def remove():
        if tap.n_failed:
            print("# kept %s" % path, flush=True)
        else:
            shutil.rmtree(path, ignore_errors=True)
    atexit.register(remove)
    return path


def free_port():
    """A port free now whose next one is free too (a collector's key
    service binds port + 1), below the kernel's ephemeral range: a port
    the kernel handed out would be the one it gives next to some
    outgoing connection, and port + 1 of it (a collector of a test
    running beside this one took such a port + 1 away, 2026-12-03).
    Falls back to a port the kernel picks."""
    rng = random.Random()
    for _ in range(200):
        p = rng.randrange(20000, 32000)
        a, b = socket.socket(), socket.socket()
        try:
            a.bind(("127.0.0.1", p))
            b.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
        finally:
            a.close()
            b.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pg_bindir():
    if os.environ.get("PARITY_PG_BINDIR"):
        return os.environ["PARITY_PG_BINDIR"]
    base = "/usr/lib/postgresql"
    versions = sorted(os.listdir(base), key=int) \
        if os.path.isdir(base) else []
    return os.path.join(base, versions[-1], "bin") if versions else ""


def as_pg_owner(cmd):
    """Run a PostgreSQL tool as the postgres user when we are root."""
    if os.getuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


def compare_json(parity, args, timeout=120):
    """`parity compare --json ARGS` through the client binary parity:
    (exit status, the document or {} when stdout is not JSON, stderr)."""
    r = subprocess.run([parity, "compare", "--json"] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {}
    return r.returncode, doc, r.stderr


def write_suite(path, suite, benchmarks, **top):
    """A suite file at path: suite's name, its benchmarks (a list of
    dicts as docs/suites.md has them) and any other top-level keys
    (variables, defaults) given by name. The path."""
    import yaml  # python3-yaml (deploy/install.sh); only tests that write
    doc = {"suite": suite}
    doc.update(top)
    doc["benchmarks"] = benchmarks
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return path


def bisect_suite(path, builds, runs, warmup=1):
    """The bisect tests' suite "build": benchmark tool, whose subject arm
    runs BUILDS/${commit}/tool (each commit's build) against /bin/true;
    commit is its revision (a bisect step runs the subject at each of its
    commits in one job, docs/bisect.md)."""
    return write_suite(path, "build", [
        {"name": "tool", "runs": runs, "warmup": warmup, "arms": [
            {"name": "tool", "subject": True,
             "shell": "exec %s/${commit}/tool" % builds},
            {"name": "base", "command": ["/bin/true"]}]}],
        revision="commit", variables={"commit": "none"})


def xmllint(path, *check):
    """xmllint --noout CHECK... path (check: "--schema", XSD or
    "--relaxng", RNG): its exit status and its stderr, stripped."""
    r = subprocess.run(["xmllint", "--noout"] + list(check) + [path],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stderr.strip()


def wait_until(cond, timeout, every=0.25):
    """Call cond until it is true or timeout seconds passed; its last
    answer."""
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(every)
    return cond()


def stop(p, sig=signal.SIGTERM, wait=20):
    """Signal p (a Popen, or None) and wait for it, killing it after wait
    s: its exit code (None for no process)."""
    if p and p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode if p else None


def stop_all(procs, sig=signal.SIGTERM, wait=20):
    """Signal every process of procs at once, then wait for each (kill
    after wait s): agents stop together, not one after the other."""
    procs = [p for p in procs if p]
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)
    for p in procs:
        try:
            p.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class World:
    """A temp dir (prefix names the test) with keys/, allow/, admin/ and
    suites/, keys made with `parity` (the client binary at parity), and
    one collector at self.endpoint once started (data in data/)."""

    def __init__(self, prefix, parity, collector):
        self.parity_exe = parity
        self.collector_exe = collector
        self.root = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.root, 0o755)   # the postgres user must reach data/pg
        self.data = os.path.join(self.root, "data")
        self.keys = os.path.join(self.root, "keys")
        self.allow = os.path.join(self.root, "allow")
        self.admin = os.path.join(self.root, "admin")
        self.suites = os.path.join(self.root, "suites")
        for d in (self.keys, self.allow, self.admin, self.suites):
            os.makedirs(d)
        self.collector = None

    def key(self, name):
        return os.path.join(self.keys, name)

    def keygen(self, name, allow=False, admin=False):
        """A key pair keys/NAME(_secret); on the allow-list or the admin
        directory when asked."""
        r = subprocess.run([self.parity_exe, "keygen", name, "--dir",
                            self.keys], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0 or not os.path.exists(self.key(name) +
                                                   "_secret"):
            bail("parity keygen %s: %s%s" % (name, r.stdout, r.stderr))
        if allow:
            shutil.copy(self.key(name), self.allow)
        if admin:
            shutil.copy(self.key(name), self.admin)
        return self.key(name)

    def collector_cmd(self, bind, heartbeat_ms, *extra):
        """parity-collector's command line for this world."""
        return [self.collector_exe, "--data-dir", self.data, "--bind", bind,
                "--key", self.key("collector") + "_secret", "--allow",
                self.allow, "--admin", self.admin, "--heartbeat-ms",
                str(heartbeat_ms)] + list(extra)

    def spawn_agent(self, agent, endpoint, name, *extra):
        """parity-agent (the binary at agent) as host name of the
        collector at endpoint, in agent-NAME/ (its cwd, spool and
        agent.log) with this world's keys and suites: the Popen."""
        home = os.path.join(self.root, "agent-" + name)
        os.makedirs(home, exist_ok=True)
        log = open(os.path.join(home, "agent.log"), "ab")
        return subprocess.Popen(
            [agent, "--collector", endpoint, "--collector-key",
             self.key("collector"), "--key", self.key(name), "--suites",
             self.suites, "--spool", os.path.join(home, "spool"),
             "--name", name] + list(extra),
            stdout=log, stderr=log, cwd=home)

    def wait_tcp(self, proc, port, log_tail=lambda: "", timeout=60):
        """Until proc (the collector) accepts TCP on 127.0.0.1:port, after
        its migrations and bind; bails when it exits or never does."""
        end = time.time() + timeout
        while time.time() < end:
            if proc.poll() is not None:
                bail("parity-collector exited %d; log:\n%s" % (
                    proc.returncode, log_tail()))
            try:
                socket.create_connection(("127.0.0.1", port),
                                         timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        bail("parity-collector not listening after %d s" % timeout)

    def psql_cmd(self, sql):
        return [os.path.join(pg_bindir(), "psql"), "-X", "-A", "-t", "-q",
                "-v", "ON_ERROR_STOP=1", "-h", os.path.join(self.data, "pg"),
                "-U", "parity", "-d", "parity", "-c", sql]

    def psql(self, sql):
        """One statement's rows as psql -At prints them, or None (said)."""
        r = subprocess.run(self.psql_cmd(sql), capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0:
            diag("psql: " + r.stderr.strip())
            return None
        return r.stdout.strip()

    def wait_for(self, sql, want, timeout, every=0.25):
        """Until psql(sql) == want; the last answer either way."""
        end = time.time() + timeout
        got = None
        while time.time() < end:
            got = self.psql(sql)
            if got == want:
                return got
            time.sleep(every)
        return got

    def stop(self, p, sig=signal.SIGTERM, wait=20):
        """Signal p and wait for it (kill after wait s): its exit code."""
        return stop(p, sig, wait)

    def sanitizer_logs(self):
        """The *.log files under the root holding a sanitizer report (an
        ASan build's processes write theirs to their logs)."""
        bad = []
        for dirpath, _, names in os.walk(self.root):
            for name in names:
                if name.endswith(".log"):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        if b"Sanitizer" in f.read():
                            bad.append(name)
        return bad

    def remove(self, keep):
        if keep:
            diag("kept " + self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def step_plan(hosts, benches, seed, commits=12, step_at=7):
    """fleet-feed's plan (tests/history/fleet_feed.c) of a fleet event per
    benchmark: every host quietly calibrated, then commits c01.. each run
    once per host and benchmark, 15 samples an arm with 1 % noise, the
    subject "new" 10 % slower from commit step_at on, "old" unchanged;
    the runs an hour a commit apart, ending 8 hours ago."""
    rng = random.Random(seed)
    out = [{"host": h, "quiet": True, "calibration": [
        round(1000 + rng.random() * 300, 1) for _ in range(200)]}
        for h in hosts]
    t0 = int(time.time() * 1e6) - 20 * 3600 * 1000000
    for ci in range(commits):
        for hi, h in enumerate(hosts):
            for bi, b in enumerate(benches):
                slow = 1.10 if ci + 1 >= step_at else 1.0
                arms = [{"name": "new", "subject": True, "samples": [
                    round(10000 * slow * (1 + rng.gauss(0, 0.01)), 1)
                    for _ in range(15)]},
                    {"name": "old", "samples": [
                        round(10000 * (1 + rng.gauss(0, 0.01)), 1)
                        for _ in range(15)]}]
                out.append({"host": h, "suite": "fleet", "bench": b,
                            "tags": {"commit": "c%02d" % (ci + 1)},
                            "start_us": t0 + (ci * 3600 + hi * 60 + bi) *
                            1000000, "arms": arms})
    return out


def feed_plan(feed_exe, w, lines, timeout=180):
    """Send lines (step_plan's) with fleet-feed to w's collector: True,
    or None with its error said."""
    try:
        r = subprocess.run([feed_exe, w.endpoint, w.key("collector"),
                            w.keys], input="".join(json.dumps(x) + "\n"
                                                   for x in lines),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return diag("fleet-feed: no end within %d s" % timeout)
    return r.returncode == 0 or diag(r.stderr[-500:])

