#!/usr/bin/env python3
"""test_suites.py CASE BUILD_DIR -- suites that update (TAP).

Real processes, as in test_system.py (whose World this reuses): one
parity-collector with its private PostgreSQL, parity-agent daemons, the
`parity` client with an --admin key, 127.0.0.1 only.

  update   while one daemon runs (same pid throughout): a suite file is
           edited (its digest in `parity hosts --json` changes; a burst
           of 20 saves is one change), one is
           added the way an editor saves (temp file, then rename: offered
           once the burst settles), one removed (no longer offered, and
           `parity run` of it is refused); a bad file and an unreadable
           one found on rescan are logged with the file and why, are not
           offered, and the daemon carries on offering the rest; the
           directory moved away offers nothing (logged) and is watched
           again once it is back; a job
           after all that runs the edited suite and its host row names
           the edited file's digest
  mixed    two agents with different versions of one suite run one job:
           `parity verdicts JOB --json` names each host's digest, groups
           them most hosts first and flags the host that differs; the
           table says so in a note line
  example  docs/example.md end to end: a daemon whose --suites is the
           source tree's examples/compare-builds; `parity run primes
           --var base=v1.0 --var head=v1.1` builds both revisions of the
           bundled git repository on the agent and the sieve (v1.1) wins

Environment: PARITY_BUILD_DIR (default: from meson), PARITY_PG_BINDIR.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_system as ts  # noqa: E402  (World, ok, diag, bail; reads argv[2])

ok, diag, bail = ts.ok, ts.diag, ts.bail
AGENT, COLLECTOR, PARITY = ts.AGENT, ts.COLLECTOR, ts.PARITY

SUITE = """suite: %s
# %s
benchmarks:
  - name: %s
    runs: 3
    warmup: 0
    arms:
      - name: quick
        command: [/bin/true]
      - name: other
        command: [/bin/true]
"""


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Fleet:
    """A World plus daemons of their own names, keys, suites and spools."""

    def __init__(self, name):
        self.w = ts.World(name)
        self.conn = ["--collector", self.w.endpoint, "--collector-key",
                     self.w.key("collector"), "--key",
                     self.w.key("admin") + "_secret"]
        self.logs = []

    def daemon(self, name):
        """parity-agent NAME on suites dir ROOT/NAME-suites (made here)."""
        if name != "agent":
            self.w.keygen(name)
            shutil.copy(self.w.key(name), self.w.allow)
        suites = os.path.join(self.w.root, name + "-suites")
        os.makedirs(suites, exist_ok=True)
        log = os.path.join(self.w.root, name + ".log")
        self.logs.append(log)
        p = subprocess.Popen(
            [AGENT, "--collector", self.w.endpoint, "--collector-key",
             self.w.key("collector"), "--key", self.w.key(name),
             "--suites", suites, "--spool",
             os.path.join(self.w.root, name + "-spool"), "--name", name,
             "--heartbeat-ms", self.w.heartbeat_ms],
            stdout=open(log, "ab"), stderr=subprocess.STDOUT)
        self.w.children.append(p)
        return p, suites, log

    def parity(self, *args, timeout=60):
        return subprocess.run([PARITY] + list(args) + self.conn,
                              capture_output=True, text=True,
                              timeout=timeout)

    def host(self, name):
        r = self.parity("hosts", "--json")
        try:
            for h in json.loads(r.stdout)["hosts"]:
                if h["name"] == name:
                    return h
        except (ValueError, KeyError):
            diag("hosts --json: %s %s" % (r.stdout[-300:], r.stderr))
        return {}

    def wait_suites(self, name, want, timeout=15):
        """Poll `parity hosts --json` until NAME's suite_digests is want
        beside the built-in parity-selftest (every Hello lists it, with
        an empty digest), which is left out of what it returns."""
        end = time.time() + timeout
        got = None
        while time.time() < end:
            got = self.host(name).get("suite_digests")
            if isinstance(got, dict) and got.get("parity-selftest") == "":
                got = {k: v for k, v in got.items()
                       if k != "parity-selftest"}
            if got == want:
                return got
            time.sleep(0.2)
        return got


def log_has(path, *words):
    with open(path, errors="replace") as f:
        return any(all(w in line for w in words) for line in f)


def log_count(path, word):
    with open(path, errors="replace") as f:
        return sum(1 for line in f if word in line)


def stop(p):
    """SIGTERM, and SIGKILL after 30 s: its exit code."""
    return ts.pf.stop(p, wait=30)


def case_update(f):
    f.w.start_collector()
    d, suites, log = None, None, None
    d, suites, log = f.daemon("agent")
    a = os.path.join(suites, "alpha.yaml")
    b = os.path.join(suites, "beta.yaml")
    write(a, SUITE % ("alpha", "v1", "t"))
    write(b, SUITE % ("beta", "v1", "t"))
    # Written after the start: the first change the daemon notices.
    ok(f.wait_suites("agent", {"alpha": sha256(a), "beta": sha256(b)})
       == {"alpha": sha256(a), "beta": sha256(b)},
       "suites written after the daemon started are offered, with their "
       "SHA-256 (parity hosts --json suite_digests)")
    ok(f.host("agent").get("suites") == ["alpha", "beta", "parity-selftest"],
       "parity hosts lists them by name")

    write(a, SUITE % ("alpha", "v2", "t"))
    t0 = time.time()
    want = {"alpha": sha256(a), "beta": sha256(b)}
    ok(f.wait_suites("agent", want) == want,
       "an edited suite's new digest reaches the collector")
    diag("edit to `parity hosts --json` showing it: %.2f s (250 ms of it "
         "the watch's quiet period; hosts --json polled every 0.2 s)"
         % (time.time() - t0))
    ok(log_has(log, "event=suites_changed", "changed=alpha"),
       "the agent logs what changed (changed=alpha)")

    # A burst: 20 saves in a row are one change, one Hello.
    before = log_count(log, "event=suites_changed")
    for i in range(20):
        write(a, SUITE % ("alpha", "burst %d" % i, "t"))
    want["alpha"] = sha256(a)
    ok(f.wait_suites("agent", want) == want,
       "after a burst of 20 saves the last one's digest is offered")
    time.sleep(1)
    ok(log_count(log, "event=suites_changed") == before + 1,
       "the burst was one change (one suites_changed, one Hello): %d"
       % (log_count(log, "event=suites_changed") - before))

    # An editor's save: a temp file, written and renamed into place.
    tmp = os.path.join(suites, ".gamma.yaml.swp")
    write(tmp, SUITE % ("gamma", "v1", "t"))
    g = os.path.join(suites, "gamma.yaml")
    os.rename(tmp, g)
    want["gamma"] = sha256(g)
    ok(f.wait_suites("agent", want) == want,
       "a suite saved through a temp file and a rename is offered")

    os.unlink(b)
    del want["beta"]
    ok(f.wait_suites("agent", want) == want,
       "a removed suite is no longer offered")
    r = f.parity("run", "beta")
    ok(r.returncode != 0 and "beta" in r.stderr,
       "parity run of the removed suite is refused (%d: %s)"
       % (r.returncode, r.stderr.strip()[-200:]))

    # A bad suite on rescan: logged with file:line, not offered.
    bad = os.path.join(suites, "broken.yaml")
    write(bad, "suite: broken\nbenchmarks:\n  - name: x\n    arms: 7\n")
    write(a, SUITE % ("alpha", "v3", "t"))   # a change beside it
    want["alpha"] = sha256(a)
    ok(f.wait_suites("agent", want) == want,
       "beside a bad file, the other suites are still offered (alpha "
       "edited again, gamma)")
    ok(log_has(log, "event=suite_invalid", bad + ":4:",
               "(not offered)"),
       "the bad file is logged with its file:line and \"(not offered)\"")
    # A directory where a suite file should be: unreadable as a suite.
    os.mkdir(os.path.join(suites, "odd.yaml"))
    write(g, SUITE % ("gamma", "v2", "t"))
    want["gamma"] = sha256(g)
    ok(f.wait_suites("agent", want) == want,
       "an unreadable entry is skipped; the rest are offered")
    ok(log_has(log, "event=suite_invalid", "odd.yaml", "not a regular file",
               "(not offered)"),
       "the unreadable one is logged: odd.yaml: not a regular file")
    # The directory itself moved away (a deploy replacing it): nothing
    # is offered, and it is watched again when it is back.
    away = suites + ".old"
    os.rename(suites, away)
    ok(f.wait_suites("agent", {}) == {},
       "a --suites directory that went away offers nothing")
    ok(log_has(log, "event=suites_unreadable", "--suites %s: opendir: No "
               "such file or directory; no suite is offered until it can be "
               "read" % suites),
       "and the agent says so: --suites DIR: opendir: No such file or "
       "directory; no suite is offered until it can be read")
    os.rename(away, suites)
    ok(f.wait_suites("agent", want) == want,
       "the directory back in place: its suites are offered again")
    ok(d.poll() is None, "the daemon is still running (pid %d, never "
       "restarted)" % d.pid)

    r = f.parity("run", "alpha", "--wait", timeout=90)
    ok(r.returncode == 0, "a job of the edited suite runs (%d: %s)"
       % (r.returncode, (r.stderr or r.stdout).strip()[-300:]))
    ok(f.w.psql("SELECT suite_digest FROM job_hosts") == sha256(a),
       "the job's host row names the digest of the file it ran")
    ok(stop(d) == 0, "the daemon exits 0 on SIGTERM")


def case_mixed(f):
    f.w.start_collector()
    agents = {}
    for name, note in (("alpha", "v1"), ("beta", "v1"), ("gamma", "v2")):
        p, suites, log = f.daemon(name)
        path = os.path.join(suites, "shared.yaml")
        write(path, SUITE % ("shared", note, "t"))
        agents[name] = (p, sha256(path))
    ok(agents["alpha"][1] == agents["beta"][1] != agents["gamma"][1],
       "alpha and beta share a version of suite shared; gamma's differs")
    got = {name: f.wait_suites(name, {"shared": agents[name][1]}, timeout=30)
           for name in agents}
    ok(all(got[n] == {"shared": agents[n][1]} for n in agents),
       "each host lists its version of suite shared",
       "parity hosts --json said: %s" % got)
    r = f.parity("run", "shared", "--wait", timeout=150)
    ok(r.returncode == 0, "the job runs on the three hosts (%d: %s)"
       % (r.returncode, (r.stderr or r.stdout).strip()[-300:]))
    r = f.parity("verdicts", "--json")
    try:
        body = json.loads(r.stdout)
    except ValueError:
        body = {}
        diag(r.stdout + r.stderr)
    hosts = {h["host"]: h for h in body.get("hosts", [])}
    ok(all(hosts.get(n, {}).get("suite_digest") == agents[n][1]
           for n in agents),
       "verdicts --json names each host's suite digest")
    ok([h.get("suite_differs") for n, h in sorted(hosts.items())]
       == [False, False, True],
       "only gamma is flagged suite_differs")
    groups = body.get("suite_digests", [])
    ok([(g["digest"], g["hosts"]) for g in groups]
       == [(agents["alpha"][1], ["alpha", "beta"]),
           (agents["gamma"][1], ["gamma"])],
       "suite_digests: the version most hosts ran first, with its hosts")
    r = f.parity("verdicts")
    want = ("suite shared: the hosts ran 2 versions of it (SHA-256 of the "
            "suite file):\n  %.12s alpha, beta\n  %.12s gamma  (differs "
            "from the most hosts')\n" % (agents["alpha"][1],
                                         agents["gamma"][1]))
    ok(r.returncode == 0 and want in r.stdout,
       "the table says which host ran which version:\n" + want)
    r = f.parity("verdicts", "--markdown")
    ok("- %.12s gamma  (differs" % agents["gamma"][1] in r.stdout,
       "so does --markdown, as a list")
    for name in agents:
        ok(stop(agents[name][0]) == 0, "%s exits 0 on SIGTERM" % name)


def case_example(f):
    src = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    example = os.path.join(src, "examples", "compare-builds")
    for prog in ("git", "make", "cc"):
        if not shutil.which(prog):
            print("1..0 # SKIP %s is not installed (the example builds C "
                  "from git)" % prog, flush=True)
            sys.exit(0)
    f.w.start_collector()
    log = os.path.join(f.w.root, "example.log")
    f.logs.append(log)
    d = subprocess.Popen(
        [AGENT, "--collector", f.w.endpoint, "--collector-key",
         f.w.key("collector"), "--key", f.w.key("agent"), "--suites",
         example, "--spool", f.w.spool, "--name", "builder",
         "--heartbeat-ms", f.w.heartbeat_ms],
        stdout=open(log, "ab"), stderr=subprocess.STDOUT)
    f.w.children.append(d)
    bundle = os.path.join(example, "primes.bundle")
    want = {"primes": sha256(os.path.join(example, "primes.yaml"))}
    ok(f.wait_suites("builder", want, timeout=30) == want,
       "the agent offers the example suite primes (and nothing else of "
       "that directory)")
    work = os.path.join(f.w.root, "builds")
    r = f.parity("run", "primes", "--var", "repo=" + bundle, "--var",
                 "base=v1.0", "--var", "head=v1.1", "--var",
                 "workdir=" + work, "--runs", "5", "--wait", timeout=240)
    ok(r.returncode == 0, "parity run primes --var base=v1.0 --var "
       "head=v1.1 --wait exits 0 (%d: %s)"
       % (r.returncode, (r.stderr or r.stdout).strip()[-400:]))
    r = f.parity("verdicts", "--json")
    try:
        cmp = json.loads(r.stdout)["comparisons"][0]
        v = cmp["hosts"][0]["verdict"]
    except (ValueError, KeyError, IndexError):
        cmp, v = {}, {}
        diag(r.stdout + r.stderr)
    ok((cmp.get("subject"), cmp.get("other")) == ("head", "base"),
       "the comparison is head (v1.1) against base (v1.0)")
    ok(v.get("outcome") == "win" and v.get("ratio", 1) < 0.5,
       "the sieve wins: head's median is under half of base's (%s %s)"
       % (v.get("outcome"), v.get("ratio")))
    ok(f.w.psql("SELECT (vars->>'base') || ' ' || (vars ? 'head') || ' ' "
                "|| revision || ' ' || (tags->>'head') FROM runs") ==
       "v1.0 false v1.1 v1.1",
       "the run keeps the revisions it compared: base in its vars, head "
       "(the suite's revision: variable) its revision and tag")
    ok(not os.path.exists(os.path.join(work, "head"))
       and not os.path.exists(os.path.join(work, "base")),
       "cleanup removed both builds")
    ok(stop(d) == 0, "the daemon exits 0 on SIGTERM")


CASES = {"update": case_update, "mixed": case_mixed, "example": case_example}


if __name__ == "__main__":
    ts.run_cases("test_suites.py", CASES, Fleet)
