#!/usr/bin/env python3
"""test_bisect.py bisect BUILD_DIR -- `parity bisect` across the fleet (TAP).

Real processes, as in test_jobs.py: parity-collector with its private
PostgreSQL, three parity-agent daemons (alpha, beta, gamma) on 127.0.0.1,
and the `parity` client. Their suite `build` has a benchmark `tool` whose
subject runs builds/${commit}/tool, one script per commit of 64 (c00 to
c63) that sleeps 200 ms, or 220 ms from c37 on (a 10 % step at one
commit), against /bin/true.

  find     `parity bisect start ... --wait` names c37 with a loss on
           each host, in at most 6 narrowing rounds after the two ends
           (and the retries the load asks for); each
           step is one job tagged bisect=ID that runs its commits
           interleaved (--var commit= one, --against the others);
           meanwhile the
           collector is restarted (the bisect carries on from the
           database) and an agent killed during its run of a step (the
           step is run again on that host alone); the change-point event
           that fleet-feed made between c00 and c63 (whose hosts are
           the default, and cannot run the suite) links the bisect in
           `parity regressions`, `history` and the site; the webhook gets
           one notice
  queue    every usage and request error; --git; two bisects of one suite
           sharing a host: the second waits, queued, until the first
           ends; cancel stops a bisect and its jobs; the list; a range
           without a step fails with its reason; a commit without its
           build is run again once, then fails the bisect; two 50 % steps
           (d05, d11 of 16 commits) are named both, as a spread step
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True

os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[2])
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jobs"))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
import test_jobs as tj  # noqa: E402
from parity_fixtures import ok, diag, wait_until as wait  # noqa: E402
from parity_hooks import Receiver  # noqa: E402

FEED = os.path.join(tj.BUILD, "tests", "history", "fleet-feed")
FAKE = ("f1", "f2", "f3")

HOSTS = ("alpha", "beta", "gamma")
COMMITS = ["c%02d" % i for i in range(64)]
STEP = 37


class World(tj.World):
    """The fleet and builds/cNN/tool for 64 commits: a sleep of `base`
    seconds, and from commit `at` on `step` times as long. The collector's --parity
    is `parity`, its default 0.04 when None (tests/bench/bisect_bench.py
    asks for other steps)."""

    def __init__(self, step=1.10, at=STEP, parity=None, base=0.2):
        super().__init__()
        self.parity_arg = parity
        self.builds = os.path.join(self.root, "builds")
        for i, c in enumerate(COMMITS):
            d = os.path.join(self.builds, c)
            os.makedirs(d)
            with open(os.path.join(d, "tool"), "w") as f:
                f.write("#!/bin/sh\nexec sleep %.4f\n" %
                        (base * step if i >= at else base))
            os.chmod(os.path.join(d, "tool"), 0o755)
        tj.pf.bisect_suite(os.path.join(self.suites, "build.yaml"),
                           self.builds, runs=10)
        # d00..d15: two 50 % steps, at d05 and at d11 (a spread step).
        # 500 ms, not 200: what a full test run on 2 cores adds to a sleep
        # is a few milliseconds whatever its length (6 ms, 3 % of 200 ms,
        # once left a commit at the old level too near the 5 % tolerance
        # to call, four tries running); at 500 ms it is about 1 %.
        for i in range(16):
            d = os.path.join(self.builds, "d%02d" % i)
            os.makedirs(d)
            with open(os.path.join(d, "tool"), "w") as f:
                f.write("#!/bin/sh\nexec sleep %.4f\n" %
                        (0.5 * 1.5 ** ((i >= 5) + (i >= 11))))
            os.chmod(os.path.join(d, "tool"), 0o755)
        self.commits = os.path.join(self.root, "commits.txt")
        with open(self.commits, "w") as f:
            # what git rev-list --reverse c00..c63 prints: c00 left out
            f.write("".join(c + "\n" for c in COMMITS[1:]))

    def start_collector(self, *extra):
        # The collector's default tolerance: each step measures its
        # commits in one job, so what a 2-core machine running other
        # tests adds to a sleep from one job to the next (2 % to 3 % on
        # 200 ms) falls on all of them alike.
        self.extra = extra or getattr(self, "extra", ())
        parity = ("--parity", self.parity_arg) if self.parity_arg else ()
        self.collector = subprocess.Popen(
            self.collector_cmd(self.endpoint, tj.HEARTBEAT_MS, *parity,
                               *self.extra), stdout=self.log,
            stderr=self.log)
        self.wait_tcp(self.collector, self.port)

    def bisect(self, *args, timeout=60):
        return self.parity("bisect", *args, timeout=timeout)

    def status(self, bid):
        return self.pjson("bisect", "status", str(bid), "--json") or {}


def start_fleet(w, *extra):
    w.start_collector(*extra)
    for n in HOSTS:
        w.start_agent(n)
    ok(w.wait_online(list(HOSTS), True), "three agents are online")


def job_row_state(w, job, host):
    got = tj.requests(w, [("job", json.dumps({"job": job}))])
    try:
        body = json.loads(got[0][1])
    except ValueError:
        return None
    for h in body.get("hosts", []):
        if h.get("host") == host:
            return h.get("state")
    return None



def feed_event(w):
    """fleet-feed's hosts f1..f3 ran build/tool six times at c00, then
    six times at c63, 10 % slower: one fleet event between c00 and c63
    (nightly runs of two releases)."""
    rng = random.Random(7)
    lines = [{"host": h, "quiet": True, "calibration": [
        round(1000 + rng.random() * 300, 1) for _ in range(200)]}
        for h in FAKE]
    t0 = int(time.time() * 1e6) - 20 * 3600 * 1000000
    for ci in range(12):
        commit = "c00" if ci < 6 else "c63"
        for hi, h in enumerate(FAKE):
            slow = 1.10 if ci >= 6 else 1.0
            lines.append({"host": h, "suite": "build", "bench": "tool",
                          "tags": {"commit": commit},
                          "start_us": t0 + (ci * 3600 + hi * 60) * 1000000,
                          "arms": [{"name": "tool", "subject": True,
                                    "samples": [round(200000 * slow * (
                                        1 + rng.gauss(0, 0.01)), 1)
                                        for _ in range(15)]},
                                   {"name": "base", "samples": [
                                       round(1000 * (1 + rng.gauss(0, 0.01)),
                                             1) for _ in range(15)]}]})
    r = subprocess.run([FEED, w.endpoint, w.key("collector"), w.keys],
                       input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=180)
    ok(r.returncode == 0, "fleet-feed sends 3 hosts x 12 commits (%s)" %
       r.stderr[-300:])

    def event():
        body = w.pjson("regressions", "--json") or {}
        for e in body.get("change_points", {}).get("events", {}).get(
                "open", []):
            if e.get("benchmark") == "tool" and e.get("hosts_with_step") == 3:
                return e
        return None
    ok(wait(lambda: event() is not None, 60),
       "the collector finds the event of f1, f2, f3 between c00 and c63")
    return event() or {}


def run_faults(w, p):
    """While `bisect start --wait` (p) runs: the collector restarted once
    the third step is made, then beta killed during its run of the next
    step and started again. A kill that came just after beta's run ended
    (its row said running, its results were on their way) leaves the
    row done and no rerun: then beta is killed again in a later step, at
    most three times. What was done, for the checks."""
    done = {"restart": False, "killed": None}

    def steps():
        return (w.status(1) or {}).get("steps", [])
    seen = []

    def grew(n):
        got = steps()
        if len(got) > n:
            seen[:] = got
        return len(got) > n
    if not wait(lambda: grew(2) or p.poll() is not None, 300):
        return done
    tj.restart_collector(w, signal.SIGTERM)
    done["restart"] = True
    for _ in range(3):
        if not wait(lambda: grew(len(seen)) or p.poll() is not None, 120) \
                or p.poll() is not None:
            return done
        job, commit = seen[-1]["job"], seen[-1]["commit"]
        if not (wait(lambda: job_row_state(w, job, "beta") == "running" or
                     p.poll() is not None, 60) and p.poll() is None):
            return done
        w.stop_agent("beta", signal.SIGKILL)
        time.sleep(0.5)
        w.start_agent("beta")
        wait(lambda: grew(len(seen)) and any(s["rerun"] for s in seen) or
             job_row_state(w, job, "beta") == "done" or
             p.poll() is not None, 120)
        if any(s["rerun"] for s in seen):
            done["killed"] = commit
            return done
        diag("beta was killed after its run of %s ended; again" % commit)
    return done


def check_found(w, out, rx, event):
    ok("done: the first bad commit is c37\n" in out and
       "  c37 (after c36): x1." in out, "it names c37, after c36")
    b = w.status(1)
    res = b.get("result") or {}
    cs = res.get("culprits", [])
    ok(len(cs) == 1 and cs[0]["commit"] == "c37" and
       cs[0]["previous"] == "c36" and not res.get("spread"),
       "the result: one culprit, c37 (%s)" % [c.get("commit") for c in cs])
    hv = {h["host"]: h for h in (cs[0]["hosts"] if cs else [])}
    ok(sorted(hv) == list(HOSTS) and
       all(h["outcome"] == "loss" and 1.05 < h["ratio"] < 1.16
           for h in hv.values()),
       "each host: c37 against c36 is a loss near x1.10 (%s)" %
       {k: (v["outcome"], round(v["ratio"], 3)) for k, v in hv.items()})
    steps = b.get("steps", [])
    groups = {}
    for s in steps:
        if s["rerun"] == 0:
            groups.setdefault((s["mid"], s["try"]), []).append(s)
    ends = [g for (m, t), g in groups.items() if m < 0]
    looks = [g for (m, t), g in groups.items() if m >= 0 and t == 0]
    again = [g for (m, t), g in groups.items() if m >= 0 and t > 0]
    rounds, retries = res.get("rounds", 99), res.get("retries", 99)
    # Six looks narrow 64 commits to one; a retry (a midpoint too near
    # the rule's edge, which the load of a full test run can make) is the
    # same job with twice the runs. Each is one job that measures the
    # midpoint beside its interval's two ends.
    one_job = all(len({s["job"] for s in g}) == 1 for g in groups.values())
    ok(len(looks) == rounds - retries <= 6 and len(again) == retries and
       len(ends) == 1 and len(ends[0]) == 2 and one_job and
       all(len(g) == 3 for g in looks + again) and
       res.get("jobs") == len({s["job"] for s in steps}),
       "6 narrowing rounds at most after the ends, one job each: the ends "
       "in one, each look and retry the midpoint beside its interval's "
       "ends in one (rounds %s, retries %s, jobs %s)" % (
           rounds, retries, res.get("jobs")))
    rows = w.psql("SELECT job_uuid || '|' || (vars->>'commit') || '|' || "
                  "(SELECT string_agg(x->>'value', ',' ORDER BY x->>'value') "
                  "FROM jsonb_array_elements(against) x) || '|' || "
                  "tags::text FROM jobs WHERE tags->>'bisect' = '1'") or ""
    made = {}
    for line in rows.splitlines():
        job, head, others, tags = line.split("|")
        made[job] = (head, sorted(others.split(",")), tags)
    want = {}
    for s in steps:
        want.setdefault(s["job"], set()).add(s["commit"])
    ok(want and all(job in made and made[job][2] == '{"bisect": "1"}' and
                    {made[job][0]} | set(made[job][1]) == cs and
                    made[job][0] not in made[job][1]
                    for job, cs in want.items()),
       "every job is tagged bisect=1 and runs its group's commits: one as "
       "--var commit, the others --against (%s)" % list(made.values())[:3])
    ok(b.get("event") == event.get("id"),
       "the bisect is stored with event #%s (%s)" % (event.get("id"),
                                                      b.get("event")))
    r = w.parity("regressions")
    found = re.search(r"#%s tool \(tool vs base\): slower on 3 of \d hosts "
                 r"between c00 and c63, .*\n    bisect 1 found "
                 r"c37\n" % event.get("id"), r.stdout)
    ok(found is not None, "parity regressions: the event's line, then "
       "\"bisect 1 found c37\"" + ("" if found else "\n" + r.stdout))
    body = w.pjson("regressions", "--json") or {}
    ev = [e for e in body.get("change_points", {}).get("events", {}).get(
        "open", []) if e.get("id") == event.get("id")]
    ok(ev and ev[0].get("bisect") == {"id": 1, "state": "done",
                                      "reason": "", "culprits": ["c37"]},
       "regressions --json: the event's bisect (%s)" % (
           ev[0].get("bisect") if ev else None))
    r = w.parity("history", "tool", "--suite", "build", "--host", "f1")
    ok("  ratio" in r.stdout and "    bisect 1 found c37\n" in r.stdout,
       "parity history: f1's change point at c63 links the bisect")
    site = os.path.join(w.root, "site")
    r = w.parity("report", "--site", site, timeout=120)
    with open(os.path.join(site, "index.html")) as f:
        html = f.read()
    ok(re.search(r'id="event-%s".*?bisect 1 found c37' % event.get("id"),
                 html, re.S) is not None,
       "report --site: the event's row says bisect 1 found c37")
    ok(wait(lambda: any('"kind": "bisect"' in b.replace('":"', '": "')
                        for _, b in rx.notices()), 30),
       "the webhook gets the bisect's notice")
    texts = [json.loads(b).get("text") for _, b in rx.notices()
             if json.loads(b).get("parity", {}).get("kind") == "bisect"]
    ok(len(texts) == 1 and re.match(
        r"Parity: bisect #1 of build/tool found the first bad commit: c37 "
        r"\(x1\.\d{3}, after c36\)$", texts[0] or ""),
       "one notice: %s" % texts)


def case_find():
    w = World()
    rx = Receiver("ok")
    rx.start()
    try:
        for h in FAKE:
            w.keygen(h, allow=True)
        start_fleet(w, "--notify-url", rx.url)
        event = feed_event(w)
        r = w.bisect("start", "--suite", "build", "--bench", "tool",
                     "--good", "c00", "--bad", "c63", "--commits", w.commits)
        ok(r.returncode == 1 and r.stderr.strip() ==
           'parity bisect: host "f1" did not list suite "build" in its last '
           "Hello", "by default the event's hosts: f1 cannot run the suite "
           "(%d %s)" % (r.returncode, r.stderr.strip()))
        t0 = time.time()
        p = subprocess.Popen(
            [tj.PARITY, "bisect", "start", "--suite", "build", "--bench",
             "tool", "--good", "c00", "--bad", "c63", "--commits", w.commits,
             "--hosts", "alpha,beta,gamma", "--wait"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=w.client_env())
        faults = run_faults(w, p)
        try:
            out, err = p.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        diag("bisect --wait took %.0f s\n%s%s" % (time.time() - t0, out,
                                                   err))
        ok(p.returncode == 0, "bisect start --wait exits 0 (%d)" %
           p.returncode)
        ok(faults["restart"], "the collector was restarted during it")
        steps = w.status(1).get("steps", [])
        reruns = [s for s in steps if s["rerun"]]
        jobs = {s["job"] for s in reruns}
        first = [s for s in steps if not s["rerun"] and reruns and
                 (s["mid"], s["try"]) == (reruns[0]["mid"], reruns[0]["try"])]
        ok(faults["killed"] and len(jobs) == 1 and
           sorted(s["commit"] for s in reruns) ==
           sorted(s["commit"] for s in first) and
           faults["killed"] in [s["commit"] for s in reruns] and
           job_row_state(w, reruns[0]["job"], "beta") == "done" and
           job_row_state(w, reruns[0]["job"], "alpha") is None,
           "beta, killed during the job of %s, ran that step's job again "
           "alone (%s)" % (faults["killed"],
                           [(s["commit"], s["job"]) for s in reruns]))
        check_found(w, out, rx, event)
    finally:
        rx.stop()
        w.close(keep=tj.tap.n_failed > 0)


def usage_errors(w):
    c = w.commits
    start = ("start", "--suite", "build", "--bench", "tool")
    cases = [
        ((), "parity bisect: which one? start, status or cancel (parity "
         "bisect --help)"),
        (("frob",), 'parity bisect: unknown subcommand "frob": start, '
         "status or cancel (parity bisect --help)"),
        (("start", "--suite", "build"), "parity bisect: start needs --bench "
         "(parity bisect --help)"),
        (start + ("--good", "c00", "--bad", "c63"), "parity bisect: start "
         "needs the commits: --commits FILE or --git DIR (one of them)"),
        (start + ("--good", "c00", "--bad", "c63", "--commits", c, "--git",
                  "."), "parity bisect: start needs the commits: --commits "
         "FILE or --git DIR (one of them)"),
        (start + ("--good", "c00", "--bad", "c63", "--commits",
                  "/nonexistent"), "parity bisect: --commits /nonexistent: "
         "No such file or directory"),
        (start + ("--good", "c00", "--bad", "c99", "--commits", c),
         "parity bisect: --bad c99 is not in %s" % c),
        (start + ("--good", "c20", "--bad", "c10", "--commits", c),
         "parity bisect: --good c20 comes after --bad c10 in %s (the commits "
         "go oldest first, as git rev-list --reverse prints them)" % c),
        (start + ("--good", "c10", "--bad", "c10", "--commits", c),
         "parity bisect: --good and --bad are the same commit (c10)"),
        (start + ("--good", "c00", "--bad", "c63", "--commits", c, "--var",
                  "commit=x"), "parity bisect: --var commit: each step sets "
         "commit to the commit it measures"),
        (start + ("--good", "c00", "--bad", "c63", "--commits", c, "--runs",
                  "1"), 'parity bisect: --runs "1": want 2..10000'),
        (("status", "x"), 'parity bisect: "x" is not a bisect id (parity '
         "bisect status lists them)"),
        (("cancel",), "parity bisect: which bisect? (parity bisect cancel "
         "ID; parity bisect status lists them)"),
    ]
    for args, msg in cases:
        r = w.bisect(*args)
        ok(r.returncode == 2 and r.stderr.strip() == msg,
           "bisect %s: exit 2, %s (got %d: %s)" % (" ".join(args[:1]), msg,
                                                   r.returncode,
                                                   r.stderr.strip()))
    big = os.path.join(w.root, "big.txt")
    with open(big, "w") as f:
        f.write("".join("%040x\n" % i for i in range(2000)))
    r = w.bisect(*start, "--good", "%040x" % 0, "--bad", "%040x" % 1999,
                 "--commits", big)
    ok(r.returncode == 2 and r.stderr.strip() == "parity bisect: 2000 "
       "commits from %040x to %040x are more than one request carries "
       "(63000 bytes of ids, about 1,500 full SHA-1 ids): narrow the range "
       "(a nearer --good or --bad)" % (0, 1999),
       "a range too long for one request (%s)" % r.stderr.strip())
    bad = os.path.join(w.root, "bad.txt")
    with open(bad, "w") as f:
        f.write("c00\nnot an id\n")
    r = w.bisect(*start, "--good", "c00", "--bad", "c63", "--commits", bad)
    ok(r.returncode == 2 and r.stderr.strip() == 'parity bisect: %s: "not '
       'an id" is not a commit id (one id a line, at most 128 bytes)' % bad,
       "a line that is not a commit id (%s)" % r.stderr.strip())


def request_errors(w):
    cm = json.dumps(COMMITS[:3])
    got = tj.requests(w, [
        ("bisect_start", "{}"),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": ["c00"]}'),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": ["c00", "c01", "c00"]}'),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": ["c00", "c 1"]}'),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": %s, "hosts": ["nope"]}' % cm),
        ("bisect_start", '{"suite": "build", "benchmark": "nope", '
         '"commits": %s}' % cm),
        ("bisect_start", '{"suite": "build", "benchmark": "nope", '
         '"commits": %s, "hosts": ["alpha"]}' % cm),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": %s, "vars": {"commit": "x"}}' % cm),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": %s, "runs": 1}' % cm),
        ("bisect_start", '{"suite": "build", "benchmark": "tool", '
         '"commits": %s, "x": 1}' % cm),
        ("bisect_status", '{"bisect": 99}'),
        ("bisect_status", '{"bisect": "1"}'),
        ("bisect_cancel", "{}"),
        ("bisect_cancel", '{"bisect": 99}')])
    want = [
        ("1", '"suite" must be a non-empty string of at most 1024 bytes'),
        ("1", '"commits" must be a list of 2 to 100000 commit ids, the good '
              "end first and the bad end last"),
        ("1", 'commit "c00" is listed twice in "commits"'),
        ("1", 'commit 2 of "commits" must be 1 to 128 printable bytes '
              "without spaces"),
        ("1", 'no host is named "nope" (parity hosts lists them)'),
        ("1", 'no host lists suite "build" with benchmark "nope" (parity '
              "hosts shows what each listed)"),
        ("1", 'host "alpha": its suite "build" has no benchmark "nope"'),
        ("1", '"vars" must not set "commit": each step sets it to the '
              "commit it measures"),
        ("1", '"runs" must be an integer from 2 to 10000'),
        ("1", 'unknown argument "x" for bisect_start (known: suite benchmark '
              "commits hosts vars runs)"),
        ("4", "no bisect 99 (parity bisect status lists them)"),
        ("1", '"bisect" (a bisect id, a positive integer) is wrong'),
        ("1", '"bisect" (a bisect id, a positive integer) is required'),
        ("4", "no bisect 99 (parity bisect status lists them)")]
    for (st, text), (wst, wtext) in zip(got, want):
        ok(st == wst and text == wtext, "request: %s %s" % (wst, wtext) +
           ("" if st == wst and text == wtext else " (got %s %s)" %
            (st, text)))


def git_repo(w):
    """A repository of 5 commits; their ids, oldest first."""
    d = os.path.join(w.root, "repo")
    os.makedirs(d)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "init", "-q", d], check=True, env=env)
    for i in range(5):
        subprocess.run(["git", "-C", d, "commit", "-q", "--allow-empty",
                        "-m", "c%d" % i], check=True, env=env)
    ids = subprocess.run(["git", "-C", d, "rev-list", "--reverse", "HEAD"],
                         capture_output=True, text=True,
                         check=True).stdout.split()
    return d, ids


def case_queue():
    w = World()
    try:
        start_fleet(w)
        usage_errors(w)
        request_errors(w)
        if shutil.which("git"):
            d, ids = git_repo(w)
            r = w.bisect("start", "--suite", "build", "--bench", "tool",
                         "--good", "HEAD~3", "--bad", "HEAD", "--git", d,
                         "--hosts", "alpha", "--json")
            b = w.status(1)
            ok(r.returncode == 0 and b.get("good") == ids[1] and
               b.get("bad") == ids[4] and b.get("commits") == 4,
               "--git: HEAD~3..HEAD as full ids, 4 commits (%s..%s, %s)" % (
                   b.get("good"), b.get("bad"), b.get("commits")))
            r = w.bisect("cancel", "1")
            ok(r.returncode == 0 and re.match(
                r"bisect 1 cancelled \(\d+ jobs? stopped\)$", r.stdout.strip()),
               "cancel 1: %s" % r.stdout.strip())
        else:
            ok(False, "git is installed (deploy/install.sh)")
        r = w.bisect("cancel", "1")
        ok(r.returncode == 1 and r.stderr.strip() == "parity bisect: bisect "
           "1 has already ended (cancelled)", "cancel again: %s" %
           r.stderr.strip())
        # Two bisects of one suite sharing beta: the second waits.
        for hosts in ("alpha,beta", "beta,gamma"):
            r = w.bisect("start", "--suite", "build", "--bench", "tool",
                         "--good", "c00", "--bad", "c63", "--commits",
                         w.commits, "--hosts", hosts)
        ok(wait(lambda: w.status(2).get("state") == "running" and
                len(w.status(2).get("steps", [])) == 2, 30),
           "bisect 2 runs and measures its ends")
        time.sleep(3)
        b3 = w.status(3)
        ok(b3.get("state") == "queued" and not b3.get("steps"),
           "bisect 3, sharing beta with 2, waits queued with no job (%s)" %
           b3.get("state"))
        r = w.bisect("status")
        ok(re.search(r"^3 +build/tool +queued +c00\.\.c63 \(64\) +beta, "
                     r"gamma +-?$", r.stdout, re.M) and
           re.search(r"^1 +build/tool +cancelled .* cancelled$", r.stdout,
                     re.M), "status lists them:\n" + r.stdout)
        r = w.bisect("cancel", "2")
        jobs2 = [s["job"] for s in w.status(2).get("steps", [])]
        states = [(w.pjson("verdicts", j, "--json") or {}).get("state")
                  for j in jobs2]
        ok(r.returncode == 0 and w.status(2).get("state") == "cancelled" and
           all(s in ("cancelled", "ended") for s in states),
           "cancel 2: it and its jobs stop (%s)" % states)
        ok(wait(lambda: w.status(3).get("state") == "running", 30),
           "then bisect 3 starts")
        w.bisect("cancel", "3")
        # A range without a step fails, saying why.
        r = w.bisect("start", "--suite", "build", "--bench", "tool",
                     "--good", "c00", "--bad", "c10", "--commits", w.commits,
                     "--hosts", "alpha", "--wait", timeout=300)
        ok(r.returncode == 1 and re.search(
            r"^parity bisect: bisect 4 failed: no host sees a step between "
            r"the good end c00 and the bad end c10(?: after more runs)?: "
            r"alpha x\d\.\d{3} parity \(tolerance \d+\.\d %\)$", r.stderr,
            re.M),
           "no step between c00 and c10: exit 1, the reason (%d %s)" % (
               r.returncode, r.stderr.strip()[-300:]))
        # A commit whose build is missing: its run fails, again on the
        # rerun, and the bisect fails naming the host and the commit. Its
        # ends are d00 and d15 (2.25 times slower): a full test run's load
        # on 2 cores (a tolerance of 8 % once) cannot hide that step, as
        # it could c00 against c63's 10 %.
        three = os.path.join(w.root, "three.txt")
        with open(three, "w") as f:
            f.write("d00\ncbad\nd15\n")
        r = w.bisect("start", "--suite", "build", "--bench", "tool",
                     "--good", "d00", "--bad", "d15", "--commits", three,
                     "--hosts", "alpha", "--runs", "6", "--wait",
                     timeout=300)
        steps = w.status(5).get("steps", [])
        ok(r.returncode == 1 and re.search(
            r"^parity bisect: bisect 5 failed: host alpha did not complete "
            r"commit cbad \(beside d00, d15\), twice \(its job: failed.*; "
            r"its run: failed", r.stderr, re.M) and
           [(s["commit"], s["rerun"]) for s in steps][-6:] ==
           [("d00", 0), ("cbad", 0), ("d15", 0), ("d00", 1), ("cbad", 1),
            ("d15", 1)],
           "a commit without its build: run again once, then the bisect "
           "fails naming host and commit (%d %s; steps %s)" % (
               r.returncode, r.stderr.strip()[-400:],
               [(s["commit"], s["rerun"]) for s in steps]))
        # Two steps of 50 %: the bisect says the step is spread, and names
        # both commits.
        two = os.path.join(w.root, "two.txt")
        with open(two, "w") as f:
            f.write("".join("d%02d\n" % i for i in range(16)))
        r = w.bisect("start", "--suite", "build", "--bench", "tool",
                     "--good", "d00", "--bad", "d15", "--commits", two,
                     "--hosts", "alpha", "--runs", "5", "--wait",
                     timeout=300)
        cs = (w.status(6).get("result") or {}).get("culprits", [])
        ok(r.returncode == 0 and "done: the step is spread over 2 commits\n"
           in r.stdout and re.search(r"^  d05 \(after d04\): x1\.\d{3} on 1 "
                                     r"of 1 hosts$", r.stdout, re.M) and
           re.search(r"^  d11 \(after d10\): x1\.\d{3} on 1 of 1 hosts$",
                     r.stdout, re.M) and
           [c["commit"] for c in cs] == ["d05", "d11"] and
           w.status(6).get("result", {}).get("spread") is True,
           "two 50 %% steps: spread over d05 and d11 (%d)\n%s" % (
               r.returncode, r.stdout[:600] + r.stderr[-600:]))
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST, FEED)
    cases = {"find": case_find, "queue": case_queue}
    cases[sys.argv[1]]()
    tj.pf.finish()


if __name__ == "__main__":
    main()
