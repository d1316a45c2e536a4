#!/usr/bin/env python3
"""test_adaptive.py -- runs: auto and the calibration store, end to end.

    test_adaptive.py PARITY_AGENT PARITY TESTPROG

Real processes (parity-testprog of tests/helpers) through the built
`parity compare` and `parity-agent run`: how many rounds `--runs auto`
takes and why it stops (checked against an independent Python copy of the
stopping rule of docs/verdict.md), and which floor a comparison uses: the
host's calibration store pooled with its own runs, --fresh-floor, a much
noisier invocation, a bad store set aside. Emits TAP.
"""
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, plan  # noqa: E402

AGENT, PARITY, PROG = sys.argv[1:4]
TMP = tempfile.mkdtemp(prefix="parity-adaptive-test-")
CACHE = os.path.join(TMP, "cache")
os.environ["XDG_CACHE_HOME"] = CACHE
HOST = "".join(c if c.isalnum() or c in ".-" else "_"
               for c in os.uname().nodename)
STORE = os.path.join(CACHE, "parity", "calibration-" + HOST)
# The timed arms sleep with coreutils' sleep, not PROG: in a sanitized
# build PROG's own start is 50-60 ms of CPU on some VMs (ASan's shadow
# memory), noise that swamped 2 against 20 ms under CI's load.
SLEEP = shutil.which("sleep") or "/bin/sleep"
S = shlex.quote(SLEEP)


def compare(*args, timeout=300):
    """parity compare --json ARGS: (status, document or {}, stderr)."""
    return pf.compare_json(PARITY, args, timeout)


def store_lines():
    try:
        with open(STORE) as f:
            return f.read().split("\n")[:-1]
    except OSError:
        return []


def decisive(v):
    """The stopping rule of docs/verdict.md, written again from the page."""
    a, b = v["subject"], v["other"]
    n = min(a["n"], b["n"])

    def spread(s):
        return max(s["iqr"] / s["median"], 0.526 * v["floor_us"] / s["median"])
    m = 3.0 * math.sqrt(0.8630 * (spread(a) ** 2 + spread(b) ** 2) / n)

    def side(r, t):
        x, edge = math.log(r), math.log1p(t)
        if x > edge + m:
            return 1
        if x < -edge - m:
            return -1
        if abs(x) < edge - m:
            return 0
        return 2
    s = side(v["ratio"], v["tolerance"])
    return s != 2 and s == side(v["best_ratio"], v["best_tolerance"])


# --- the calibration store -------------------------------------------------
code, doc, err = compare("-r", "3", "-w", "0", "--", PROG, "--", PROG)
fl = doc.get("floor", {})
ok(code == 0 and err == "" and fl.get("why") == "no_store" and
   fl.get("source") == "session" and fl.get("store_samples") == 0,
   "first invocation: no store yet, the floor is its own runs'", (code, err,
                                                                  fl))
lines = store_lines()
ok(lines[:1] == ["parity-calibration 2"] and
   len(lines) - 1 == fl.get("session_samples"),
   "its %s calibration runs are stored" % fl.get("session_samples"),
   lines[:3])
first = fl.get("session_samples", 0)
code, doc, err = compare("-r", "3", "-w", "0", "--", PROG, "--", PROG)
fl = doc.get("floor", {})
ok(code == 0 and fl.get("why") in ("store", "noisy") and
   fl.get("store_samples") == first,
   "second invocation: the store's %d runs are read" % first, fl)
if fl.get("why") == "store":
    ok(fl.get("source") == "pooled" and
       fl.get("calibration_samples") == first + fl.get("session_samples", 0)
       and "from the calibration store" in fl.get("text", ""),
       "pooled with this invocation's runs", fl)
else:
    ok(True, "# SKIP the machine got much noisier between the two")
b = doc["benchmarks"][0] if doc.get("benchmarks") else {}
ok(all(v["floor_us"] == fl.get("floor_us")
       for v in b.get("verdict", {}).values()),
   "the verdict records the floor used")

code, doc, err = compare("-r", "3", "-w", "0", "--fresh-floor", "--", PROG,
                         "--", PROG)
fl = doc.get("floor", {})
ok(code == 0 and fl.get("why") == "fresh" and fl.get("source") == "session"
   and fl.get("calibration_samples") == fl.get("session_samples") and
   "--fresh-floor: the store (" in fl.get("text", ""),
   "--fresh-floor: this invocation's runs alone", fl)
ok(len(store_lines()) - 1 == min(1000, first + 2 * fl["session_samples"]),
   "and they are still stored")

# A store of 1000 runs 1 us apart: any real invocation is much noisier.
with open(STORE, "w") as f:
    f.write("parity-calibration 1\n")
    for i in range(1000):
        f.write("1700000000000000 %.3f\n" % (300 + i / 1000.0))
code, doc, err = compare("-r", "3", "-w", "0", "--", PROG, "--", PROG)
fl = doc.get("floor", {})
ok(code == 0 and fl.get("why") == "noisy" and fl.get("source") == "session"
   and fl.get("floor_us") == fl.get("session_floor_us"),
   "much noisier than the store: this invocation's floor, not pooled", fl)
r = subprocess.run([PARITY, "compare", "-r", "3", "-w", "0", "--", PROG,
                    "--", PROG], capture_output=True, text=True, timeout=120)
ok(r.returncode == 0 and "this invocation's runs are much noisier than the "
   "store's" in r.stdout and r.stderr == "",
   "the report says so beside the floor, stderr stays quiet",
   (r.stdout, r.stderr))

for text, why in (("garbage\n", 'line 1: expected "parity-calibration 2" '
                  '(or an older "parity-calibration 1")'),
                  ("parity-calibration 1\n1 -3\n",
                   "line 2: expected TAKEN_AT_US WALL_US (an integer >= 0, "
                   "a time > 0 and <= 1e+07 us)")):
    with open(STORE, "w") as f:
        f.write(text)
    code, doc, err = compare("-r", "3", "-w", "0", "--", PROG, "--", PROG)
    ok(code == 0 and err == "parity compare: calibration store %s: %s; set "
       "aside as %s.bad, starting a new store\n" % (STORE, why, STORE) and
       os.path.exists(STORE + ".bad") and
       doc.get("floor", {}).get("why") == "no_store",
       "a bad store is set aside: %s" % why.split(":")[0], err)
os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, "afile")
with open(os.path.join(TMP, "afile"), "w") as f:
    f.write("x")
code, doc, err = compare("-r", "3", "-w", "0", "--", PROG, "--", PROG)
ok(code == 0 and err == "parity compare: calibration store: mkdir(%s/afile/"
   "parity): Not a directory; the floor is this invocation's runs alone\n"
   % TMP and doc.get("floor", {}).get("why") == "no_store",
   "an unusable cache directory: said, and the comparison goes on", err)
os.environ["XDG_CACHE_HOME"] = CACHE

# --- runs: auto ------------------------------------------------------------
# 2 ms against 20 ms: decisive at the first look, 10 runs.
code, doc, err = compare("--runs", "auto", "--fresh-floor", "-w", "0", "--",
                         SLEEP, "0.002", "--", SLEEP, "0.02")
b = doc["benchmarks"][0] if doc.get("benchmarks") else {}
v = list(b.get("verdict", {}).values())[:1]
ok(code == 0 and b.get("runs") == 10 and len(b.get("order", [])) == 10 and
   b.get("adaptive") == {"max_runs": 100, "runs_taken": 10,
                         "stopped": "decisive"},
   "a clear difference stops at the first look: 10 runs, decisive",
   (code, err, b.get("runs"), b.get("adaptive")))
ok(v and v[0]["outcome"] == "win" and decisive(v[0]),
   "the rule's verdict is a win, decisive by docs/verdict.md's rule", v)
ok(all(s["round"] < 10 for s in b.get("samples", [])),
   "no sample past the rounds taken")

# Median ratio out, best ratio in (one run in three of the other arm is
# as fast as the subject): never decisive, so it runs to the cap.
count = os.path.join(TMP, "count")
with open(count, "w") as f:
    f.write("0\n")
# Both arms do the same shell work around the sleep, so their fastest
# runs differ by the sleep alone (an unequal overhead of 3 ms under load
# once made the best ratio a win), and 100 ms dwarfs the scheduling
# noise left in the minimums (1 ms under load was 5 % of 20 ms).
count2 = os.path.join(TMP, "count2")
with open(count2, "w") as f:
    f.write("0\n")
script = ("n=$(cat %s); echo $((n+1)) > %s; if [ $((n %% 3)) = 0 ]; then "
          "%s 0.1; else %s %s; fi")
slow = script % (count, count, S, S, "0.2")
fast = script % (count2, count2, S, S, "0.1")
code, doc, err = compare("--runs", "auto", "--max-runs", "12", "-w", "0",
                         fast, slow)
b = doc["benchmarks"][0] if doc.get("benchmarks") else {}
v = list(b.get("verdict", {}).values())[:1]
ok(code == 0 and b.get("runs") == 12 and b.get("adaptive") ==
   {"max_runs": 12, "runs_taken": 12, "stopped": "cap"},
   "ratios that disagree are never decisive: it stops at the cap",
   (code, err, b.get("runs"), b.get("adaptive"), v))
ok(v and v[0]["outcome"] == "parity" and not decisive(v[0]),
   "parity, not decisive", v)
r = subprocess.run([PARITY, "compare", "--runs", "auto", "-M", "12", "-w",
                    "0", fast, slow], capture_output=True, text=True,
                   timeout=120)
ok(r.returncode == 0 and "(12 runs: auto, not decisive at the cap (at most "
   "12), 0 warm-ups)" in r.stdout, "the report says how many and why",
   r.stdout)

# parity-agent run: runs: auto in the suite, --runs N over it.
suite = pf.write_suite(os.path.join(TMP, "auto.yaml"), "auto", [
    {"name": "far", "runs": "auto", "max_runs": 30, "warmup": 0, "arms": [
        {"name": "a", "command": [SLEEP, "0.002"]},
        {"name": "b", "command": [SLEEP, "0.02"]}]}])
out = os.path.join(TMP, "auto.json")
r = subprocess.run([AGENT, "run", suite, "--export-json", out],
                   capture_output=True, text=True, timeout=300)
with open(out) as f:
    doc = json.load(f)
b = doc["benchmarks"][0]
ok(r.returncode == 0 and b["adaptive"]["max_runs"] == 30 and
   b["adaptive"]["stopped"] == "decisive" and b["runs"] == 10 and
   "far: complete (10 runs: auto, stopped when decisive (at most 30), "
   "0 warm-ups)" in r.stdout, "a suite's runs: auto and max_runs",
   (r.stdout, r.stderr))
r = subprocess.run([AGENT, "run", suite, "--runs", "4", "--export-json",
                    out], capture_output=True, text=True, timeout=300)
with open(out) as f:
    doc = json.load(f)
b = doc["benchmarks"][0]
ok(r.returncode == 0 and b["runs"] == 4 and "adaptive" not in b,
   "--runs 4 overrides the suite's auto")
r = subprocess.run([AGENT, "run", suite, "--max-runs", "5", "--export-json",
                    out], capture_output=True, text=True, timeout=300)
with open(out) as f:
    doc = json.load(f)
b = doc["benchmarks"][0]
ok(r.returncode == 0 and b["runs"] == 5 and
   b["adaptive"]["max_runs"] == 5, "--max-runs 5 caps it: one look at 5",
   b.get("adaptive"))

status = plan()
subprocess.run(["rm", "-rf", TMP])
sys.exit(status)
