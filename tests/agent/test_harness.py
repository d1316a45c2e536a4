#!/usr/bin/env python3
"""test_harness.py -- parity-agent run/env and parity compare, end to end.

Real processes only: suites of parity-testprog (tests/helpers) run by the
built parity-agent; the results file is read back and checked.

    test_harness.py PARITY_AGENT PARITY TESTPROG
Emits TAP.
"""
import json
import os
import signal
import subprocess
import sys
import time

AGENT, PARITY, PROG = sys.argv[1:4]
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, tap  # noqa: E402,F401


def run(args, timeout=60, **kw):
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=timeout, **kw)


TMP = pf.tempdir("parity-agent-test-")
# Each run of the test has its own calibration store (ag_calstore.h),
# never the user's.
os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, "cache")


def path(name):
    return os.path.join(TMP, name)


def suite(name, text):
    p = path(name)
    with open(p, "w") as f:
        f.write(text)
    return p


def agent_run(suite_path, *extra, timeout=60):
    out = path("results-%d.json" % tap.n_tests)
    r = run([AGENT, "run", suite_path, "--export-json", out] + list(extra),
            timeout=timeout)
    doc = None
    if os.path.exists(out):
        with open(out) as f:
            doc = json.load(f)
    return r, doc


def samples(bench, kind):
    return [s for s in bench["samples"] if s["kind"] == kind]


def q(s):
    return json.dumps(s)


# --- order rotation, warm-ups, calibration, hooks -------------------------
log = path("order.log")
hooks = path("hooks.log")
p = suite("order.yaml", """
suite: order
benchmarks:
  - name: rot
    runs: 4
    warmup: 1
    arms:
      - name: a
        command: [%(prog)s, append, %(log)s, a]
        setup: [%(prog)s, append, %(hooks)s, setup-a]
        cleanup: [%(prog)s, append, %(hooks)s, cleanup-a]
        prepare: [%(prog)s, append, %(hooks)s, prepare-a]
        conclude: [%(prog)s, append, %(hooks)s, conclude-a]
        versions: [[%(prog)s, print-args, v1.2]]
      - name: b
        command: [%(prog)s, append, %(log)s, b]
      - name: c
        command: [%(prog)s, append, %(log)s, c]
""" % {"prog": q(PROG), "log": q(log), "hooks": q(hooks)})
r, doc = agent_run(p)
ok(r.returncode == 0, "3-arm suite runs, exit 0", r.stderr)
b = doc["benchmarks"][0] if doc else {"samples": [], "order": []}
want_order = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"],
              ["a", "b", "c"]]
ok(b["order"] == want_order, "order rotates A B C, B C A, C A B",
   b.get("order"))
with open(log) as f:
    ran = f.read().split()
ok(ran == ["a", "b", "c"] + sum(want_order, []),
   "the processes really ran in the written order (warm-up row 0 first)",
   ran)
meas = samples(b, "measured")
ok(all(b["order"][s["round"]][s["position"]] == s["arm"] for s in meas),
   "every measured sample's round and position match the plan")
ok(len(meas) == 12 and len(samples(b, "warmup")) == 3,
   "12 measured and 3 warm-up samples")
cal = samples(b, "calibration")
ok(len(cal) == 4 and all(s["position"] == 3 and s["arm"] is None
                         for s in cal),
   "one calibration run per round, after the arms")
ok(doc and len(doc["calibration"]["wall_us"]) == 96,
   "96 session-start calibration runs to reach 100")
ok(doc and doc["floor"]["session_samples"] == 100 and
   doc["floor"]["calibration_samples"] >= 100 and
   doc["floor"]["default"] is False, "floor from 100 calibration samples "
   "of the session (and the host's calibration store)")
ok(all(b["summary"][a]["n"] == 4 for a in "abc"),
   "summaries count only measured samples (warm-ups discarded)")
ok(set(b["verdict"].keys()) == {"b", "c"} and
   b["verdict"]["b"]["outcome"] in ("win", "parity", "loss"),
   "a verdict for each other arm, keyed by its name")
ok(b["verdict"]["b"]["floor_us"] == doc["floor"]["floor_us"],
   "the verdict records the floor it used")
ok(b["arms"][0]["version_output"] == "[v1.2]\n", "versions output recorded",
   b["arms"][0].get("version_output"))
ok(all(s["wall_us"] > 0 and s["user_us"] >= 0 and s["maxrss_kb"] > 0 and
       s["start_unix_us"] > 1.6e15 for s in meas),
   "wall, user, maxrss and start timestamp recorded")
ok(all(s["cpu"] is None or 0 <= s["cpu"] < os.cpu_count() for s in meas),
   "cpu is a real CPU number")
with open(hooks) as f:
    h = f.read().split()
ok(h[0] == "setup-a" and h[-1] == "cleanup-a" and
   h.count("prepare-a") == 5 and h.count("conclude-a") == 5,
   "setup and cleanup once, prepare and conclude around each of 5 runs", h)
ok(doc["complete"] is True and doc["schema_version"] == 3,
   "complete: true, schema_version 3")

# --- warm-ups are discarded: the slow first run is the warm-up ------------
flag = path("warm.flag")
p = suite("warm.yaml", """
suite: warm
benchmarks:
  - name: w
    runs: 3
    warmup: 1
    arms:
      - name: first
        shell: "if [ -e %(flag)s ]; then :; else touch %(flag)s; sleep 0.3; fi"
      - name: other
        command: [/bin/true]
""" % {"flag": flag})
r, doc = agent_run(p)
b = doc["benchmarks"][0]
w = samples(b, "warmup")
ok(r.returncode == 0 and w[0]["arm"] == "first" and w[0]["wall_us"] > 2.5e5,
   "the first (slow) run is recorded as a warm-up", w)
ok(b["summary"]["first"]["max"] < 2.5e5,
   "and is not part of the measured summary", b["summary"]["first"])

# --- a clear difference is a win -----------------------------------------
p = suite("win.yaml", """
suite: win
benchmarks:
  - name: spin
    runs: 5
    warmup: 0
    arms:
      - name: fast
        command: [%(prog)s, spin, "20000"]
      - name: slow
        command: [%(prog)s, spin, "80000"]
""" % {"prog": q(PROG)})
r, doc = agent_run(p)
v = doc["benchmarks"][0]["verdict"]["slow"]
# The ratio bound leaves room for each run's fixed cost of starting a
# process, which ASan makes ~60 ms (0.605 was seen there).
ok(v["outcome"] == "win" and v["ratio"] < 0.75,
   "20 ms against 80 ms of CPU is a win for the subject", v)
ok("win" in r.stdout and "fast" in r.stdout and "median" in r.stdout,
   "the table shows the arms and the verdict", r.stdout)

# --- error samples --------------------------------------------------------
p = suite("exit.yaml", """
suite: errs
benchmarks:
  - name: badexit
    runs: 3
    warmup: 0
    arms:
      - name: good
        command: [/bin/true]
      - name: bad
        command: [%(prog)s, stderr, "it went wrong here", exit, "3"]
  - name: after
    runs: 2
    warmup: 0
    arms:
      - {name: x, command: [/bin/true]}
      - {name: y, command: [/bin/true], subject: true}
""" % {"prog": q(PROG)})
r, doc = agent_run(p)
b = doc["benchmarks"][0]
err = samples(b, "error")
ok(r.returncode == 4, "a failed benchmark exits 4", r.returncode)
ok(b["status"] == "failed" and
   b["reason"] == 'arm "bad" round 0: exited with status 3, expected 0',
   "wrong exit: failed with the reason", b.get("reason"))
ok(b["stderr_tail"] == "it went wrong here\n", "with the stderr tail",
   b.get("stderr_tail"))
ok(len(err) == 1 and err[0]["exit_status"] == 3 and
   err[0]["error"] == "exited with status 3, expected 0",
   "one error sample with its exit status", err)
ok(b["verdict"] == {} and
   b["verdict_error"] == "no verdict: the benchmark failed",
   "no verdict for a failed benchmark", b.get("verdict_error"))
ok("bad" not in b["summary"], "the error sample is never averaged in")
ok(doc["benchmarks"][1]["status"] == "complete",
   "the next benchmark still runs")
ok('failed: arm "bad" round 0: exited with status 3, expected 0' in r.stdout
   and "| it went wrong here" in r.stdout,
   "the table shows the failure and stderr", r.stdout)

p = suite("expect.yaml", """
suite: expect
benchmarks:
  - name: three
    runs: 2
    warmup: 0
    expect_exit: 3
    arms:
      - {name: a, command: [%(prog)s, exit, "3"]}
      - {name: b, command: [%(prog)s, exit, "3"]}
""" % {"prog": q(PROG)})
r, doc = agent_run(p)
ok(r.returncode == 0 and doc["benchmarks"][0]["status"] == "complete",
   "expect_exit: 3 accepts exit status 3", r.stderr)

# --- bounded captures, CPUs not here, clear start errors --------------------
def cpu_ranges(cpus):
    out, c = [], sorted(cpus)
    i = 0
    while i < len(c):
        j = i
        while j + 1 < len(c) and c[j + 1] == c[j] + 1:
            j += 1
        out.append("%d-%d" % (c[i], c[j]) if j > i else "%d" % c[i])
        i = j + 1
    return ",".join(out)


errfile = path("bounded.err")
p = suite("bounded.yaml", """
suite: bounded
benchmarks:
  - name: flood
    runs: 2
    warmup: 0
    arms:
      - name: a
        command: [/bin/true]
        versions: [[%(prog)s, flood-out, "3000000"]]
      - name: b
        command: [%(prog)s, flood, "20000000", stderr, "last words", exit, "1"]
  - name: cpus
    runs: 2
    cpus: [1000]
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/bin/true]}
  - name: hooktail
    runs: 2
    stderr: %(errfile)s
    arms:
      - {name: a, command: [/bin/true],
         setup: [%(prog)s, stderr, "setup says no", exit, "5"]}
      - {name: b, command: [/bin/true]}
  - name: isdir
    runs: 2
    arms:
      - {name: a, command: [/tmp]}
      - {name: b, command: [/bin/true]}
  - name: slowver
    runs: 2
    timeout: 0.3
    arms:
      - {name: a, command: [/bin/true],
         versions: ["echo v2; exec sleep 5"]}
      - {name: b, command: [/bin/true]}
  - name: baderr
    runs: 2
    stderr: /nonexistent-parity-dir/err.txt
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/bin/true]}
""" % {"prog": q(PROG), "errfile": q(errfile)})
r, doc = agent_run(p)
bs = {b["name"]: b for b in doc["benchmarks"]} if doc else {}
fl = bs.get("flood", {})
tail = fl.get("stderr_tail") or ""
ok(len(tail) == 2048 and tail.endswith("xxx\nEND\nlast words\n"),
   "20 MB of stderr: the last 2048 bytes are the tail", (len(tail),
                                                        tail[-40:]))
vo = (fl.get("arms") or [{}])[0].get("version_output", "")
ok(len(vo) == 16384 and vo.startswith("x" * 63 + "\n"),
   "3 MB of versions output: the first 16384 bytes kept", len(vo))
ok(bs.get("cpus", {}).get("reason") ==
   "cpus: CPU 1000 is not one this agent may run on (it may use %s)"
   % cpu_ranges(os.sched_getaffinity(0)) and
   not samples(bs["cpus"], "error"),
   "a CPU this agent may not use fails the benchmark before any run",
   bs.get("cpus", {}).get("reason"))
ok(bs.get("hooktail", {}).get("reason") ==
   'setup of arm "a": exited with status 5, expected 0' and
   bs["hooktail"].get("stderr_tail") == "setup says no\n",
   "a hook's stderr tail also with stderr: FILE", bs.get("hooktail"))
ok(bs.get("isdir", {}).get("reason") ==
   'arm "a" warm-up 0: posix_spawnp(/tmp): Permission denied (/tmp is a '
   'directory)', "a directory as the command says so",
   bs.get("isdir", {}).get("reason"))
ok(bs.get("slowver", {}).get("arms", [{}])[0].get("version_output") ==
   "v2\n(timed out after 0.3 s)\n",
   "a versions command past its timeout says so",
   bs.get("slowver", {}).get("arms"))
ok(bs.get("baderr", {}).get("reason") ==
   "stderr: open(/nonexistent-parity-dir/err.txt): No such file or "
   "directory", "a stderr file that cannot be opened",
   bs.get("baderr", {}).get("reason"))

p = suite("signal.yaml", """
suite: sig
benchmarks:
  - name: segv
    runs: 2
    warmup: 0
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [%(prog)s, signal, "11"]}
""" % {"prog": q(PROG)})
r, doc = agent_run(p)
b = doc["benchmarks"][0]
ok(b["reason"] == 'arm "b" round 0: killed by signal 11 (SIGSEGV)' and
   samples(b, "error")[0]["term_signal"] == 11 and
   samples(b, "error")[0]["exit_status"] == -1,
   "a signal is an error sample", b.get("reason"))

pidfile = path("tree.pid")
p = suite("timeout.yaml", """
suite: to
benchmarks:
  - name: hang
    runs: 2
    warmup: 0
    timeout: 0.3
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [%(prog)s, hang-tree, %(pf)s]}
""" % {"prog": q(PROG), "pf": q(pidfile)})
t0 = time.monotonic()
r, doc = agent_run(p)
took = time.monotonic() - t0
b = doc["benchmarks"][0]
ok(b["reason"] == 'arm "b" round 0: timed out after 0.3 s (process group '
   'killed)', "a timeout is an error sample", b.get("reason"))
ok(took < 5, "and does not wait for the hung command (%.1f s)" % took)
time.sleep(0.1)
with open(pidfile) as f:
    child = int(f.read().split()[0])
alive = os.path.exists("/proc/%d" % child) and \
    open("/proc/%d/stat" % child).read().split(")")[1].split()[0] != "Z"
ok(not alive, "the command's own child was killed with its group")

p = suite("noexec.yaml", """
suite: nx
benchmarks:
  - name: missing
    runs: 2
    warmup: 0
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/nonexistent/prog]}
""")
r, doc = agent_run(p)
ok(doc["benchmarks"][0]["reason"] == 'arm "b" round 0: posix_spawnp('
   '/nonexistent/prog): No such file or directory',
   "a program that cannot start is an error sample naming the call",
   doc["benchmarks"][0].get("reason"))

# --- hooks and working directories that fail -------------------------------
p = suite("hooks.yaml", """
suite: hooks
benchmarks:
  - name: badsetup
    runs: 2
    warmup: 0
    arms:
      - name: a
        command: [/bin/true]
        setup: [%(prog)s, stderr, "no input file", exit, "2"]
        cleanup: [%(prog)s, append, %(log)s, cleaned-a]
      - name: b
        command: [/bin/true]
        cleanup: [%(prog)s, append, %(log)s, cleaned-b]
  - name: badprepare
    runs: 2
    warmup: 0
    arms:
      - {name: a, command: [/bin/true], prepare: "exit 5"}
      - {name: b, command: [/bin/true]}
  - name: badcwd
    runs: 2
    warmup: 0
    arms:
      - {name: a, command: [/bin/true], cwd: /nonexistent-parity-dir}
      - {name: b, command: [/bin/true]}
  - name: badout
    runs: 2
    warmup: 0
    stdout: /nonexistent-parity-dir/out.txt
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/bin/true]}
""" % {"prog": q(PROG), "log": q(path("cleanup.log"))})
r, doc = agent_run(p)
bs = {b["name"]: b for b in doc["benchmarks"]}
ok(r.returncode == 4 and
   bs["badsetup"]["reason"] == 'setup of arm "a": exited with status 2, '
   'expected 0' and bs["badsetup"]["stderr_tail"] == "no input file\n",
   "a failing setup fails the benchmark with its stderr",
   bs["badsetup"].get("reason"))
ok(not os.path.exists(path("cleanup.log")),
   "cleanup runs only for arms whose setup ran (none here)")
ok(bs["badprepare"]["reason"] == 'prepare of arm "a": exited with status 5, '
   'expected 0', "a failing prepare", bs["badprepare"].get("reason"))
ok(bs["badcwd"]["reason"] == 'arm "a" round 0: posix_spawnp(/bin/true): '
   'chdir(/nonexistent-parity-dir): No such file or directory',
   "a missing cwd is named", bs["badcwd"].get("reason"))
ok(bs["badout"]["reason"] == 'stdout: open(/nonexistent-parity-dir/'
   'out.txt): No such file or directory' and
   bs["badout"]["samples"] == [], "an unwritable stdout file fails before "
   "any run", bs["badout"].get("reason"))

# --- Ctrl-C: partial results with complete: false -------------------------
p = suite("long.yaml", """
suite: long
benchmarks:
  - name: slow
    runs: 200
    warmup: 0
    arms:
      - {name: a, command: [%(prog)s, sleep, "100000"]}
      # From its 4th run on, b takes 30 s: the interrupt lands in such a
      # run, and only killing it ends the session quickly.
      - name: b
        shell: 'n=$(wc -l < %(count)s); echo x >> %(count)s; if [ "$n" -ge 3 ]; then exec sleep 30; else exec sleep 0.1; fi'
  - name: never
    runs: 2
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/bin/true]}
""" % {"prog": q(PROG), "count": path("count.txt")})
open(path("count.txt"), "w").close()
out = path("interrupted.json")
proc = subprocess.Popen([AGENT, "run", p, "--export-json", out],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
time.sleep(1.2)
t0 = time.monotonic()
proc.send_signal(signal.SIGINT)
so, se = proc.communicate(timeout=20)
took = time.monotonic() - t0
ok(proc.returncode == 130, "Ctrl-C exits 130", (proc.returncode, se))
# Finishing the current run would take up to 30 s; a loaded host may add
# its own delay to the kill, hence 3 s.
ok(took < 3.0, "and stops at once, killing the current run (%.2f s)" % took)
doc = json.load(open(out)) if os.path.exists(out) else {}
ok(doc.get("complete") is False, "results written with complete: false")
bs = doc.get("benchmarks", [])
ok(len(bs) == 1 and bs[0]["status"] == "incomplete" and
   bs[0]["reason"] == "interrupted",
   "the interrupted benchmark is incomplete; later ones never start",
   [(x["name"], x["status"]) for x in bs])
m = samples(bs[0], "measured") if bs else []
ok(len(m) >= 4 and all(9e4 < s["wall_us"] < 5e6 for s in m),
   "what was measured is kept (%d samples), the killed run is not" % len(m),
   [(s["arm"], s["wall_us"]) for s in m])
ok("incomplete: interrupted" in so, "the table says it is incomplete", so)

# Cleanup runs after Ctrl-C; a second Ctrl-C stops a cleanup that hangs.
cleaned = path("cleaned.txt")
for twice in (False, True):
    p = suite("cleanup-%d.yaml" % twice, """
suite: cleanup
benchmarks:
  - name: c
    runs: 100
    warmup: 0
    arms:
      - name: a
        command: [%(prog)s, hang]
        setup: [/bin/true]
        cleanup: '%(sleep)s; echo cleaned >> %(cleaned)s'
      - {name: b, command: [/bin/true]}
""" % {"prog": q(PROG), "cleaned": cleaned,
       "sleep": "sleep 30" if twice else "sleep 1"})
    if os.path.exists(cleaned):
        os.unlink(cleaned)
    proc = subprocess.Popen([AGENT, "run", p], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    if twice:
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
    so, se = proc.communicate(timeout=40)
    took = time.monotonic() - t0
    if not twice:
        ok(proc.returncode == 130 and os.path.exists(cleaned) and
           took >= 1.0, "after one Ctrl-C the cleanup still runs to its "
           "end (%.2f s)" % took, (proc.returncode, se))
    else:
        ok(proc.returncode == 130 and not os.path.exists(cleaned) and
           took < 5.0, "a second Ctrl-C stops a hanging cleanup (%.2f s)"
           % took, (proc.returncode, se))

# --- variables never reach a shell ----------------------------------------
argsout = path("args.txt")
shellout = path("shell.txt")
pwned = path("pwned")
value = "x; touch %s; $(touch %s) `touch %s`" % (pwned, pwned, pwned)
p = suite("vars.yaml", """
suite: vars
variables:
  v: default
benchmarks:
  - name: v
    runs: 2
    warmup: 0
    stdout: %(argsout)s
    arms:
      - {name: argv, command: [%(prog)s, print-args, "${v}", "pre-${v}"]}
      - name: shell
        shell: '%(rprog)s append %(rshellout)s "${v}"'
      - {name: env, command: [%(prog)s, env, PARITY_VAR_V]}
""" % {"prog": q(PROG), "argsout": q(argsout), "rprog": PROG,
       "rshellout": shellout})
r, doc = agent_run(p, "--var", "v=" + value)
ok(r.returncode == 0, "suite with a hostile --var runs", r.stderr)
lines = open(argsout).read().splitlines()
ok(lines[0] == "[%s]" % value and lines[1] == "[pre-%s]" % value,
   "in an argv the value stays one argument", lines)
ok(open(shellout).read() == (value + "\n") * 2,
   "in a shell string it arrives as one word, never parsed as code")
ok(lines[2] == value, "and is exported as PARITY_VAR_V", lines)
ok(not os.path.exists(pwned), "nothing in the value was executed")
ok(doc["benchmarks"][0]["arms"][1]["shell"] ==
   PROG + ' append ' + shellout + ' "${PARITY_VAR_V}"',
   "the shell text recorded holds a reference, not the value",
   doc["benchmarks"][0]["arms"][1])

# --- CPU pinning ----------------------------------------------------------
if os.cpu_count() >= 2:
    p = suite("pin.yaml", """
suite: pin
benchmarks:
  - name: p
    runs: 6
    warmup: 0
    cpus: [1]
    arms:
      - {name: a, command: [%(prog)s, cpus, %(f)s]}
      - {name: b, command: [%(prog)s, cpus, %(f)s]}
""" % {"prog": q(PROG), "f": q(path("cpus.txt"))})
    r, doc = agent_run(p)
    cpus = {s["cpu"] for s in doc["benchmarks"][0]["samples"]}
    ok(cpus == {1}, "cpus: [1]: every run, calibration too, recorded on 1",
       cpus)
    allowed = open(path("cpus.txt")).read().split()
    ok(allowed == ["1"] * 12, "and each process could run only on CPU 1",
       allowed)
else:
    ok(True, "# SKIP one CPU: pinning not testable")
    ok(True, "# SKIP one CPU: pinning not testable")

# --- --only, --runs, --warmup ----------------------------------------------
p = suite("two.yaml", """
suite: two
benchmarks:
  - name: one
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/bin/true]}
  - name: two
    arms:
      - {name: a, command: [/bin/true]}
      - {name: b, command: [/bin/true]}
""")
r, doc = agent_run(p, "--only", "two", "--runs", "3", "--warmup", "2")
bs = doc["benchmarks"]
ok(len(bs) == 1 and bs[0]["name"] == "two" and bs[0]["runs"] == 3 and
   len(samples(bs[0], "measured")) == 6 and
   len(samples(bs[0], "warmup")) == 4,
   "--only picks one benchmark; --runs and --warmup override")
md, csvf = path("two.md"), path("two.csv")
r = run([AGENT, "run", p, "--runs", "2", "--export-markdown", md,
         "--export-csv", csvf])
mdt = open(md).read() if os.path.exists(md) else ""
csvt = open(csvf).read().splitlines() if os.path.exists(csvf) else []
ok(r.returncode == 0 and mdt.count("### ") == 2 and
   mdt.count("| subject |") == 2 and len(csvt) == 5 and
   csvt[0].startswith("command,mean,stddev,median,user,system,min,max,"),
   "--export-markdown and --export-csv: a table per benchmark, a row per "
   "arm", (r.stderr, mdt, csvt))
r = run([AGENT, "run", p, "--json", "--runs", "2"])
try:
    j = json.loads(r.stdout)
except ValueError:
    j = {}
ok(r.returncode == 0 and j.get("schema_version") == 3 and
   len(j.get("benchmarks", [])) == 2, "--json: the results file on stdout")

# --- --against: the subject at another revision, in the same rounds ------
alog = path("against.log")
ap = suite("against.yaml", """
suite: rev
revision: commit
variables:
  commit: c00
benchmarks:
  - name: work
    runs: 3
    warmup: 1
    arms:
      - name: work
        subject: true
        command: [%(prog)s, append, %(log)s, "run-${commit}"]
        setup: [%(prog)s, append, %(log)s, "setup-${commit}"]
        versions: [[%(prog)s, print-args, "v-${commit}"]]
      - name: fixed
        command: [%(prog)s, append, %(log)s, fixed]
""" % {"prog": q(PROG), "log": q(alog)})
r, doc = agent_run(ap, "--var", "commit=c50", "--against", "commit=c00")
ok(r.returncode == 0, "--var commit=c50 --against commit=c00 runs, exit 0",
   r.stderr)
b = doc["benchmarks"][0] if doc else {"arms": [], "order": []}
ok([(a["name"], a.get("instance"), a["subject"]) for a in b["arms"]] ==
   [("work", None, True), ("fixed", None, False),
    ("work@c00", "c00", False)] and
   b.get("revision") == {"name": "commit", "value": "c50"},
   "three arms: the subject, the other, the subject at c00 (its instance)",
   (b.get("arms"), b.get("revision")))
ok(b["order"] == [["work", "fixed", "work@c00"],
                  ["fixed", "work@c00", "work"],
                  ["work@c00", "work", "fixed"]],
   "the order rotates over all three", b.get("order"))
with open(alog) as f:
    ran = f.read().split()
ok(ran[:2] == ["setup-c50", "setup-c00"] and
   ran[2:5] == ["run-c50", "fixed", "run-c00"] and
   ran.count("run-c00") == 4 and ran.count("run-c50") == 4,
   "each instance's setup and runs have its own value", ran)
ok(b["arms"][2]["version_output"] == "[v-c00]\n" if doc else False,
   "... and its versions")
ok(set(b.get("verdict", {})) == {"fixed", "work@c00"},
   "a verdict of the subject against each: the other arm and c00",
   b.get("verdict", {}).keys())
many = ["--var", "commit=c50"]
for i in range(15):
    many += ["--against", "commit=x%d" % i]
wide = suite("wide.yaml", "suite: wide\nrevision: commit\nvariables: "
             "{commit: c0}\nbenchmarks:\n  - name: w\n    arms:\n" +
             "".join("      - {name: a%d, command: [%s, \"${commit}\"]}\n"
                     % (i, q(PROG)) for i in range(3)))
taken = suite("taken.yaml", "suite: taken\nrevision: commit\nvariables: "
              "{commit: c0}\nbenchmarks:\n  - name: w\n    arms:\n"
              "      - {name: a, command: [%s, \"${commit}\"]}\n"
              "      - {name: a@c1, command: [%s]}\n" % (q(PROG), q(PROG)))
for args, code, msg in [
    ([ap, "--against", "commit"], 2,
     "parity-agent run: --against commit: expected NAME=VALUE\n"),
    ([ap, "--against", "1x=c"], 2,
     "parity-agent run: --against 1x=c: \"1x\" is not a variable name "
     "(letters, digits and _, not starting with a digit)\n"),
    ([ap] + many, 2, "parity-agent run: more than 14 --against\n"),
    ([ap, "--against", "size=2"], 1, "parity-agent run: --against size=2: "
     "--against takes suite \"rev\"'s revision variable, commit\n"),
    ([ap, "--against", "commit=c00"], 1, "parity-agent run: --against "
     "commit=c00: the subject's own value (give another)\n"),
    ([ap, "--against", "commit=c1", "--against", "commit=c1"], 1,
     "parity-agent run: --against commit=c1: given twice\n"),
    ([wide] + sum((["--against", "commit=x%d" % i] for i in range(14)),
                  []), 1,
     "parity-agent run: benchmark \"w\": 3 arms and 14 --against values "
     "make 17 arms (at most 16)\n"),
    ([taken, "--against", "commit=c1"], 1,
     "parity-agent run: --against commit=c1: benchmark \"w\" has an arm "
     "named \"a@c1\" already (the instance's name)\n"),
    ([path("order.yaml"), "--against", "commit=c1"], 1,
     "parity-agent run: --against commit=c1: suite \"order\" names no "
     "revision variable (add \"revision: commit\" to compare its values "
     "in one job; docs/suites.md \"Revision\")\n"),
]:
    r = run([AGENT, "run"] + args)
    ok(r.returncode == code and r.stderr == msg, "--against error: %s" %
       " ".join(a.replace(TMP, "$TMP") for a in args[1:5]),
       "got %d %r" % (r.returncode, r.stderr))

# --- command-line errors, each message pinned -------------------------------
bad_yaml = suite("bad.yaml", "suite: s\nbenchmarks:\n  - name: x\n"
                 "    runs: many\n")
cases = [
    ([AGENT, "run"], 2,
     "parity-agent run: missing the suite file (parity-agent run "
     "SUITE.yaml)\n"),
    ([AGENT, "run", p, "--runs", "0"], 2,
     "parity-agent run: --runs 0: expected auto or an integer from 2 to "
     "100000\n"),
    ([AGENT, "run", p, "--warmup", "x"], 2,
     "parity-agent run: --warmup x: expected an integer from 0 to 10000\n"),
    ([AGENT, "run", p, "--frobnicate"], 2,
     "parity-agent run: unknown option \"--frobnicate\" (parity-agent "
     "--help)\n"),
    ([AGENT, "run", p, "--var"], 2,
     "parity-agent run: option --var needs a value\n"),
    ([AGENT, "run", p, "--var", "novalue"], 2,
     "parity-agent run: --var novalue: expected NAME=VALUE\n"),
    ([AGENT, "run", p, "--var", "typo=1"], 1,
     "parity-agent run: %s: --var typo: suite \"two\" has no variable "
     "\"typo\" (it has no variables)\n" % p),
    ([AGENT, "run", p, p], 2,
     "parity-agent run: one suite file expected, got \"%s\" too\n" % p),
    ([AGENT, "run", p, "--only", "three"], 2,
     "parity-agent run: --only three: suite \"two\" has no such benchmark "
     "(it has: one, two)\n"),
    ([AGENT, "run", bad_yaml], 1,
     "parity-agent run: %s:4:11: runs: expected auto or an integer from 2 "
     "to 100000, found \"many\"\n" % bad_yaml),
    ([AGENT, "run", path("nope.yaml")], 1,
     "parity-agent run: %s: open: No such file or directory\n"
     % path("nope.yaml")),
    ([AGENT, "frob"], 2,
     "parity-agent: unknown command \"frob\" (parity-agent --help)\n"),
    ([AGENT, "env", "--xml"], 2,
     "parity-agent env: unknown argument \"--xml\" (parity-agent --help)\n"),
    ([PARITY, "compare"], 2,
     "parity compare: expected at least two commands: parity compare "
     "'CMD_A' 'CMD_B' (or -- CMD_A... -- CMD_B...)\n"),
    ([PARITY, "compare", "--", "/bin/true"], 2,
     "parity compare: expected at least two commands: parity compare "
     "'CMD_A' 'CMD_B' (or -- CMD_A... -- CMD_B...)\n"),
    ([PARITY, "compare", "--", "/bin/true", "--"], 2,
     "parity compare: command 2 is empty: put the command after \"--\"\n"),
    ([PARITY, "compare", "--runs", "0", "--", "a", "--", "b"], 2,
     "parity compare: --runs 0: expected auto or an integer from 2 to "
     "100000\n"),
    ([PARITY, "compare", "--warmup", "--", "a", "--", "b"], 2,
     "parity compare: --warmup needs a value\n"),
    ([PARITY, "compare", "--fast", "--", "a", "--", "b"], 2,
     "parity compare: unknown option \"--fast\" (parity compare --help)\n"),
    ([PARITY, "compare"] + ["--", "a"] * 17, 2,
     "parity compare: more than 16 commands\n"),
    ([AGENT, "run", p] + ["--var", "v=1"] * 257, 2,
     "parity-agent run: more than 256 --var\n"),
    ([AGENT, "run", p] + ["--only", "one"] * 257, 2,
     "parity-agent run: more than 256 --only\n"),
    ([PARITY, "compare", "--", "", "--", "b"], 2,
     "parity compare: command 1: the program name is empty\n"),
    ([PARITY, "compare", "--export-json", TMP, "--", "a", "--", "b"], 2,
     "parity compare: --export-json %s: is a directory\n" % TMP),
    ([AGENT, "run", p, "--export-json", "/nonexistent-dir/x.json"], 2,
     "parity-agent run: --export-json /nonexistent-dir/x.json: cannot "
     "write in /nonexistent-dir: No such file or directory\n"),
    ([AGENT, "run", p, "--export-markdown", TMP], 2,
     "parity-agent run: --export-markdown %s: is a directory\n" % TMP),
    ([AGENT, "run", p, "--export-csv", "/nonexistent-dir/x.csv"], 2,
     "parity-agent run: --export-csv /nonexistent-dir/x.csv: cannot "
     "write in /nonexistent-dir: No such file or directory\n"),
]
for args, code, msg in cases:
    r = run(args)
    ok(r.returncode == code and r.stderr == msg,
       "error: %s" % " ".join(a.replace(TMP, "$TMP") for a in args[1:]),
       "got %d %r" % (r.returncode, r.stderr))
# A results file that fails only at the end: the results still reach
# stdout and the exit status says the file was not written.
if os.geteuid() == 0 and os.path.isdir("/proc"):
    r = run([PARITY, "compare", "--runs", "2", "--warmup", "0",
             "--export-json", "/proc/parity-x.json", "--", "/bin/true",
             "--", "/bin/true"])
    ok(r.returncode == 3 and "compare: complete" in r.stdout and
       r.stderr == "parity compare: fopen(/proc/parity-x.json.tmp): No such "
       "file or directory\n", "a failed --export-json keeps the table",
       (r.returncode, r.stdout, r.stderr))
else:
    ok(True, "# SKIP needs root to pass the write check on /proc")
for args in ([AGENT, "--help"], [AGENT, "run", "--help"],
             [PARITY, "compare", "--help"]):
    r = run(args)
    ok(r.returncode == 0 and "usage:" in r.stdout and "exit status" in
       r.stdout, "%s prints usage" % " ".join(args[1:]))
# stdout that cannot be written (a full disk): said, exit 3, never 0.
if os.path.exists("/dev/full"):
    full_cases = [
        ([AGENT, "--help"], "parity-agent: write to stdout failed\n"),
        ([AGENT, "--version"], "parity-agent: write to stdout failed\n"),
        ([AGENT, "run", "--help"],
         "parity-agent run: write to stdout failed\n"),
        ([AGENT, "env"], "parity-agent env: write to stdout failed\n"),
        ([AGENT, "env", "--help"],
         "parity-agent env: write to stdout failed\n"),
        ([PARITY, "compare", "--help"],
         "parity compare: write to stdout failed\n"),
        ([PARITY, "compare", "--runs", "2", "--warmup", "0", "--",
          "/bin/true", "--", "/bin/true"],
         "parity compare: write to stdout: No space left on device\n"),
    ]
    for args, msg in full_cases:
        with open("/dev/full", "w") as full:
            r = subprocess.run(args, stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=60)
        ok(r.returncode == 3 and r.stderr == msg,
           "stdout on /dev/full: %s" % " ".join(args[1:3]),
           (r.returncode, r.stderr))
r = run([AGENT, "--version"])
ok(r.returncode == 0 and r.stdout.startswith("parity-agent "), "--version")

# --- parity compare ----------------------------------------------------------
out = path("compare.json")
r = run([PARITY, "compare", "--runs", "4", "--warmup", "1", "--json",
         "--export-json", out, "--", PROG, "spin", "15000", "--", PROG,
         "spin", "60000"])
try:
    j = json.loads(r.stdout)
except ValueError:
    j = {}
ok(r.returncode == 0 and j.get("schema_version") == 3,
   "parity compare --json: the results file on stdout", r.stderr)
f = json.load(open(out)) if os.path.exists(out) else None
ok(f == j, "--export-json writes the same document")
b = (j.get("benchmarks") or [{}])[0]
names = [a["name"] for a in b.get("arms", [])]
ok(names == [PROG + " spin 15000", PROG + " spin 60000"] and
   b["arms"][0]["subject"] and
   b["arms"][0]["command"] == [PROG, "spin", "15000"],
   "arms named by their command lines, the first is the subject", names)
ok(list(b.get("verdict", {}).keys()) == [names[1]] and
   b["verdict"][names[1]]["outcome"] == "win",
   "the verdict of the subject against the other", b.get("verdict"))
r = run([PARITY, "compare", "--runs", "3", "--", "/bin/true", "--",
         "/bin/true"])
ok(r.returncode == 0 and "/bin/true#2" in r.stdout and "verdict:" in
   r.stdout, "the same command twice gets a #2 name; table printed",
   r.stdout)
for args, msg in (
        ([PARITY, "compare", "-r", "1", "a", "b"],
         "parity compare: --runs 1: expected auto or an integer from 2 to "
         "100000\n"),
        ([AGENT, "run", "x.yaml", "--runs", "1"],
         "parity-agent run: --runs 1: expected auto or an integer from 2 "
         "to 100000\n"),
        ([AGENT, "run", "x.yaml", "--runs", "100001"],
         "parity-agent run: --runs 100001: expected auto or an integer from "
         "2 to 100000\n"),
        ([AGENT, "run", "x.yaml", "--max-runs", "1"],
         "parity-agent run: --max-runs 1: expected an integer from 2 to "
         "100000\n")):
    r = run(args)
    ok(r.returncode == 2 and r.stderr == msg, "one range of --runs "
       "(pw_limits.h): %s" % " ".join(args[1:]), (r.returncode, r.stderr))
r = run([PARITY, "compare", "--runs", "2", "--", "/bin/true", "--", PROG,
         "exit", "1"])
ok(r.returncode == 4 and "exited with status 1, expected 0" in r.stdout,
   "a failing command: exit 4 and the reason", (r.returncode, r.stdout))

# Arguments that are not UTF-8: arms named with '?', still told apart.
r = subprocess.run([os.fsencode(PARITY), b"compare", b"--runs", b"2",
                    b"--warmup", b"0", b"--json", b"--", b"/bin/echo",
                    b"\xff", b"--", b"/bin/echo", b"\xfe"],
                   capture_output=True, timeout=60)
try:
    j = json.loads(r.stdout)
except ValueError:
    j = {}
b = (j.get("benchmarks") or [{}])[0]
ok(r.returncode == 0 and [a["name"] for a in b.get("arms", [])] ==
   ["/bin/echo ?", "/bin/echo ?#2"] and
   sorted(b.get("summary", {})) == ["/bin/echo ?", "/bin/echo ?#2"] and
   b["summary"]["/bin/echo ?"]["n"] == 2,
   "argv bytes that are not UTF-8: '?' in names, each arm its own",
   (r.returncode, r.stderr, b.get("arms")))
p = suite("badver.yaml", """
suite: badver
benchmarks:
  - name: b
    runs: 2
    warmup: 0
    arms:
      - name: a
        command: [/bin/true]
        versions: ["printf 'v1 \\\\377\\\\376 end'"]
      - {name: c, command: [/bin/true]}
""")
r, doc = agent_run(p)
ok(r.returncode == 0 and doc["benchmarks"][0]["status"] == "complete" and
   doc["benchmarks"][0]["arms"][0]["version_output"] == "v1 ?? end",
   "versions output that is not UTF-8 is kept with '?' (it stopped the "
   "run before)", (r.returncode, r.stdout))

# --- the progress line: on a terminal only -------------------------------------
import pty
import select
p = suite("progress.yaml", """
suite: prog
benchmarks:
  - name: tick
    runs: 3
    warmup: 1
    arms:
      - {name: a, command: [%(prog)s, sleep, "20000"]}
      - {name: b, command: [%(prog)s, sleep, "20000"]}
""" % {"prog": q(PROG)})
master, slave = pty.openpty()
proc = subprocess.Popen([AGENT, "run", p], stdout=subprocess.PIPE,
                        stderr=slave, text=True)
os.close(slave)
tty = b""
while True:
    ready, _, _ = select.select([master], [], [], 20)
    if not ready:
        break
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    tty += chunk
so, _ = proc.communicate(timeout=20)
os.close(master)
text = tty.decode(errors="replace")
ok("tick  warm-up 1/1  ETA" in text and "tick  round 3/3  ETA 0.0 s" in text,
   "on a terminal: benchmark, round n/N and ETA on stderr", repr(text))
ok("round" not in so and "ETA" not in so, "never on stdout")
r = run([AGENT, "run", p])
ok("ETA" not in r.stderr and r.stderr == "",
   "nothing of it when stderr is not a terminal", r.stderr)

# --- parity-agent env ----------------------------------------------------------
r = run([AGENT, "env", "--json"])
env = json.loads(r.stdout)
ok(r.returncode == 0, "parity-agent env --json")
for key in ("hostname", "kernel", "arch", "logical_cpus", "memory_total_kb",
            "memory_available_kb", "load_average", "boot_id", "uptime_s",
            "agent_version", "aslr", "clocksource"):
    ok(key in env and "value" in env[key] and env[key]["source"],
       "env field %s with its source" % key, env.get(key))
ok(env["hostname"]["value"] == os.uname().nodename, "hostname is right")
ok(env["logical_cpus"]["value"] == os.cpu_count(), "logical_cpus is right")
ok(env["boot_id"]["value"] ==
   open("/proc/sys/kernel/random/boot_id").read().strip(),
   "boot_id is the kernel's")
has_cpuinfo_model = "model name" in open("/proc/cpuinfo").read()
ok(("cpu_model" in env) == has_cpuinfo_model or "cpu_model" in env,
   "cpu_model present when /proc/cpuinfo has it")
gov_file = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
cpu0 = [c for c in env["cpus"] if c["cpu"] == 0]
if cpu0:
    ok(("governor" in cpu0[0]) == os.path.exists(gov_file),
       "governor present exactly when cpufreq exposes it")
else:
    ok(True, "# SKIP cpu0 not in the affinity set")
ok(("power_source" in env) ==
   any(open("/sys/class/power_supply/%s/type" % d).read().strip() in
       ("Mains", "Battery")
       for d in (os.listdir("/sys/class/power_supply")
                 if os.path.isdir("/sys/class/power_supply") else [])),
   "power_source absent exactly when there is no power supply")
load1 = os.getloadavg()[0]
codes = [w["code"] for w in env["warnings"]]
ok(("load" in codes) == (env["load_average"]["value"][0] / os.cpu_count()
                         > 0.1),
   "the load warning follows the load average", (load1, codes))
r = run([AGENT, "env"])
ok(r.returncode == 0 and "hostname" in r.stdout and "uname(2)" in r.stdout,
   "parity-agent env: text with sources")

pf.finish()
