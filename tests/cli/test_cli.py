#!/usr/bin/env python3
"""test_cli.py -- `parity`, `parity verdict` and `parity import` through
the built binary ($PARITY), emitting TAP.

The cases of cli_cases.yaml pin every message a user can hit: each is
arguments, stdin, expected exit status, substring of stdout, substring of
stderr. Files the rows name (@NAME) are written to a temporary directory
from FILES first. After the table come the checks that need more than a
substring: the spec's worked example, batch output against an independent
Python implementation of the rule, the fast and jansson batch paths
against each other, and the imports against `parity verdict`.
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import yaml  # python3-yaml (deploy/install.sh)

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
from parity_fixtures import ok, plan  # noqa: E402

PARITY = os.environ.get("PARITY") or (sys.argv[1] if len(sys.argv) > 1 else "")
SRC = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(SRC, "..", "..", "examples")


def run(args, stdin=b"", env=None, stdout=subprocess.PIPE, timeout=60):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([PARITY] + args, input=stdin, stdout=stdout,
                       stderr=subprocess.PIPE, env=e, timeout=timeout)
    out = p.stdout.decode("utf-8", "replace") if p.stdout is not None else ""
    return p.returncode, out, p.stderr.decode("utf-8", "replace")


# --- files the table refers to as @name -----------------------------------

def hf(*results):
    return json.dumps({"results": list(results)})


def hres(cmd, times):
    return {"command": cmd, "mean": 0.001, "times": times}


def gb(*entries):
    return json.dumps({"context": {"num_cpus": 2}, "benchmarks": list(entries)})


def git(name, t, unit="ns", **extra):
    e = {"name": name, "run_name": name, "run_type": "iteration",
         "repetitions": 3, "real_time": t, "cpu_time": t, "time_unit": unit}
    e.update(extra)
    return e


T3 = [0.001, 0.0011, 0.0012]
FILES = {
    "empty.json": "",
    "text.json": "this is not json\n",
    "trunc.json": '{"results": [\n  {"command": "a",\n',
    "array.json": "[1, 2, 3]",
    "noresults.json": '{"benchmarks": []}',
    "zeroresults.json": '{"results": []}',
    "resultnotobj.json": '{"results": [3]}',
    "nocommand.json": hf(hres("a", T3), {"times": T3}),
    "notimes.json": hf({"command": "a", "mean": 0.001}, hres("b", T3)),
    "stringtime.json": hf(hres("a", T3), hres("b", [0.001, "0.002", 0.003])),
    "zerotime.json": hf(hres("a", [0.0, 0.001]), hres("b", T3)),
    "onetime.json": hf(hres("a", T3), hres("b", [0.001])),
    "onecommand.json": hf(hres("only", T3)),
    "hf-good.json": hf(hres("old", [0.0010, 0.00101, 0.00102, 0.00103,
                                    0.00104, 0.00105, 0.00106]),
                       hres("new", [0.0008, 0.00081, 0.00082, 0.00083,
                                    0.00084, 0.00085, 0.00086]),
                       hres("same", [0.00100, 0.001011, 0.00102, 0.001031,
                                     0.00104, 0.00105, 0.001061])),
    "gb-nobench.json": '{"results": []}',
    "gb-notobj.json": gb(7),
    "gb-noname.json": gb({"run_type": "iteration", "real_time": 1}),
    "gb-unitnum.json": gb(git("BM_a", 1.0, unit=3)),
    "gb-unit.json": gb(git("BM_a", 1.0, unit="fortnights")),
    "gb-noreal.json": gb({"name": "BM_a", "run_type": "iteration"}),
    "gb-realstr.json": gb(git("BM_a", "1.0")),
    "gb-realzero.json": gb(git("BM_a", 0)),
    "gb-aggonly.json": gb({"name": "BM_a_mean", "run_name": "BM_a",
                           "run_type": "aggregate", "aggregate_name": "mean",
                           "real_time": 1.0, "time_unit": "ns"}),
    "gb-base.json": gb(git("BM_a", 10.0), git("BM_a", 10.1),
                       git("BM_a", 10.2), git("BM_one", 5.0),
                       git("BM_err", 5.0), git("BM_err", 5.1),
                       git("BM_onlybase", 1.0), git("BM_onlybase", 1.1)),
    "gb-cont.json": gb(git("BM_a", 10.0), git("BM_a", 10.1),
                       git("BM_a", 10.2), git("BM_one", 5.0),
                       git("BM_one", 5.1),
                       git("BM_err", 5.0, error_occurred=True,
                           error_message="out of cheese"),
                       git("BM_err", 5.0),
                       git("BM_onlycont", 1.0), git("BM_onlycont", 1.1)),
    "gb-other.json": gb(git("BM_z", 1.0), git("BM_z", 1.1)),
    "gb-hugetime.json": gb(git("BM_a", 1e303, unit="s")),
    "nul.json": '{"results":[]}\0',
    "dupkey.json": '{"results": [], "results": []}',
    "deep.json": '{"results": ' + "[" * 3000 + "]" * 3000 + "}",
    "hugetime.json": hf(hres("a", [0.001, 1e303]), hres("b", T3)),
    "range.json": hf(hres("a", [1e300, 2e300]), hres("b", [1e-300, 2e-300])),
}
FILES["bom.json"] = "\ufeff" + FILES["hf-good.json"]

# (arguments, stdin, exit status, stdout substring, stderr substring):
# the cases of cli_cases.yaml, and those whose arguments are not UTF-8
# (a surrogate stands for the byte, as os.fsencode reads it).
BYTE_CASES = [
    (["verdict", "--a", "1,2", "--b", "1,2", "--names", "\udcff,b"], "", 2,
     "", "parity verdict: --names: the names are not UTF-8 text"),
]


def cases():
    """cli_cases.yaml's rows as (args, stdin, status, stdout, stderr),
    then BYTE_CASES."""
    with open(os.path.join(SRC, "cli_cases.yaml"), encoding="utf-8") as f:
        rows = yaml.safe_load(f)
    return [(r["args"], r.get("stdin", ""), r["status"], r.get("stdout", ""),
             r.get("stderr", "")) for r in rows] + BYTE_CASES


def expand(s, tmp):
    return s.replace("@", tmp + "/")


def table(tmp):
    for name, text in FILES.items():
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(tmp, "huge.json"), "w") as f:
        f.truncate((256 << 20) + 1)     # sparse: no disk used
    for args, stdin, status, out, err in cases():
        args = [expand(a, tmp) for a in args]
        out, err = expand(out, tmp), expand(err, tmp)
        code, got_out, got_err = run(args, stdin.encode())
        label = " ".join(a.replace(tmp + "/", "@") for a in args)[:70]
        ok(code == status and out in got_out and err in got_err,
           "parity %s -> %d %s" % (label, status,
                                   (err or out).replace(tmp + "/", "@")[:60]),
           "exit %d\nstdout: %s\nstderr: %s" % (code, got_out[:500],
                                                got_err[:500]))


# --- checks beyond substrings ---------------------------------------------

def q7(sorted_x, p):
    h = (len(sorted_x) - 1) * p
    lo = int(math.floor(h))
    if lo >= len(sorted_x) - 1:
        return sorted_x[-1]
    return sorted_x[lo] + (h - lo) * (sorted_x[lo + 1] - sorted_x[lo])


def reference_verdict(a, b, floor_us=25.0, parity=0.04):
    """The rule of verdict-rule.md, written again without the C code."""
    a, b = sorted(a), sorted(b)
    med_a, med_b = q7(a, 0.5), q7(b, 0.5)
    noise = max((q7(a, .75) - q7(a, .25)) / med_a,
                (q7(b, .75) - q7(b, .25)) / med_b)
    ratio, best = med_a / med_b, a[0] / b[0]
    tol = max(parity, noise, floor_us / min(med_a, med_b))
    btol = max(parity, floor_us / min(a[0], b[0]))

    def leave(r, t):
        return 1 if r > 1 + t else (-1 if r < 1 / (1 + t) else 0)
    m, n = leave(ratio, tol), leave(best, btol)
    outcome = "loss" if m == n == 1 else ("win" if m == n == -1 else "parity")
    return {"outcome": outcome, "ratio": ratio, "best_ratio": best,
            "tolerance": tol, "noise": noise, "best_tolerance": btol,
            "floor_us": floor_us, "parity": parity}


def close(x, y):
    return abs(x - y) <= 1e-12 * max(abs(x), abs(y), 1e-300)


def worked_example():
    args = ["verdict", "--a", "566,568,576,690,722",
            "--b", "587,700,712,718,725", "--floor-us", "25", "--parity",
            "0.04"]
    code, out, err = run(args)
    ok(code == 0, "worked example: exit 0", err)
    lines = out.splitlines()
    ok(len(lines) > 3 and lines[0].split() == ["arm", "n", "min", "median",
                                               "max", "IQR"],
       "worked example: table header", out)
    ok(lines[1].split() == ["a", "5", "566.0", "µs", "576.0", "µs", "722.0",
                            "µs", "122.0", "µs"],
       "worked example: subject row n/min/median/max/IQR", out)
    ok(lines[2].split() == ["b", "5", "587.0", "µs", "712.0", "µs", "725.0",
                            "µs", "18.0", "µs"],
       "worked example: other row", out)
    ok("ratio       0.8090  tolerance       0.2118  (noise 0.2118)" in out and
       "best_ratio  0.9642  best_tolerance  0.0442" in out,
       "worked example: ratios and tolerances in the table", out)
    ok("note: the subject's runs fall in two timing modes" in out,
       "worked example: timing modes noted", out)
    ok("no calibration of 100 runs" not in out,
       "worked example: --floor-us given, so no default-floor note", out)

    code, out, err = run(args + ["--json"])
    try:
        v = json.loads(out)
    except ValueError:
        v = {}
    ok(code == 0 and v.get("outcome") == "parity",
       "worked example --json: outcome parity", out + err)
    want = {"ratio": 0.80899, "best_ratio": 0.96422, "noise": 0.21181,
            "tolerance": 0.21181, "best_tolerance": 0.04417}
    ok(all(abs(v.get(k, 0) - x) < 5e-5 for k, x in want.items()),
       "worked example --json: the spec's five figures", out)
    ok(v.get("floor_us") == 25.0 and v.get("parity") == 0.04,
       "worked example --json: floor_us and parity recorded", out)
    ok("timing_modes_subject" in v.get("diagnostics", []) and
       "default_floor" not in v.get("diagnostics", []),
       "worked example --json: diagnostics by name", out)
    ok(v.get("subject", {}).get("median") == 576.0 and
       v.get("other", {}).get("iqr") == 18.0 and
       v.get("subject_name") == "a", "worked example --json: summaries", out)
    ref = reference_verdict([566, 568, 576, 690, 722],
                            [587, 700, 712, 718, 725])
    ok(all(close(v.get(k, -1), ref[k]) for k in ref if k != "outcome"),
       "worked example --json equals the Python rule to 1e-12", out)

    code, out, err = run(["verdict", "--a", "566,568,576,690,722",
                          "--b", "587,700,712,718,725", "--json"])
    ok("default_floor" in json.loads(out or "{}").get("diagnostics", []),
       "without --floor-us the default-floor diagnostic is set", out)


def random_lines(rng, n):
    lines, refs = [], []
    for i in range(n):
        na, nb = rng.randint(2, 12), rng.randint(2, 12)
        centre = rng.choice([50.0, 600.0, 20000.0])
        shift = rng.choice([1.0, 1.0, 1.16, 0.8, 1.03])
        spread = rng.choice([0.001, 0.01, 0.1])
        a = [round(centre * shift * (1 + rng.uniform(-spread, spread)), 3)
             for _ in range(na)]
        b = [round(centre * (1 + rng.uniform(-spread, spread)), 3)
             for _ in range(nb)]
        line = {"a": a, "b": b}
        if i % 3 == 0:
            line["floor_us"] = rng.choice([0, 5.5, 25, 100])
        if i % 4 == 0:
            line["parity"] = rng.choice([0, 0.02, 0.04, 0.1])
        lines.append(line)
        refs.append(reference_verdict(a, b, float(line.get("floor_us", 25)),
                                      float(line.get("parity", 0.04))))
    return lines, refs


def batch_against_python():
    rng = random.Random(20261202)
    lines, refs = random_lines(rng, 3000)
    text = "".join(json.dumps(x) + "\n" for x in lines).encode()
    code, out, err = run(["verdict", "--batch"], text)
    got = [json.loads(x) for x in out.splitlines()]
    ok(code == 0 and len(got) == len(lines),
       "batch: 3000 random lines, 3000 answers, exit 0", err)
    bad = [i for i, (g, r) in enumerate(zip(got, refs))
           if g.get("outcome") != r["outcome"] or
           not all(close(g.get(k, -1), r[k]) for k in r if k != "outcome")]
    ok(not bad, "batch: every line equals the Python rule (outcome, ratios, "
       "tolerances, noise, floor, parity)",
       "first bad line %s: %s vs %s" % (bad[0] + 1, got[bad[0]], refs[bad[0]])
       if bad else "")
    outcomes = {r["outcome"] for r in refs}
    ok(outcomes == {"win", "parity", "loss"},
       "batch: the random lines cover win, parity and loss")
    ok(all(("default_floor" in g["diagnostics"]) == ("floor_us" not in x)
           for g, x in zip(got, lines)),
       "batch: default_floor exactly when the line has no floor_us")


# --- the whole written form against Python, diagnostics included ----------

DIAG_ORDER = ["timing_modes_subject", "timing_modes_other", "few_runs",
              "wide_tolerance", "default_floor", "ratios_disagree"]


def py_timing_modes(x):
    """docs/verdict.md, "Timing modes", written again."""
    s = sorted(x)
    n = len(s)
    if n < 4:
        return False
    widest, cut = -1.0, 0
    for i in range(2, n - 1):
        if s[i] - s[i - 1] > widest:
            widest, cut = s[i] - s[i - 1], i
    return (widest >= 0.05 * q7(s, 0.5) and widest > s[cut - 1] - s[0] and
            widest > s[n - 1] - s[cut])


def py_written_form(a, b, floor_us, parity, floor_given):
    """verdict-rule.md plus docs/verdict.md's diagnostics and extra runs."""
    v = reference_verdict(a, b, floor_us, parity)
    sa, sb = sorted(a), sorted(b)
    ra = (q7(sa, .75) - q7(sa, .25)) / q7(sa, .5)
    rb = (q7(sb, .75) - q7(sb, .25)) / q7(sb, .5)

    def leave(r, t):
        return 1 if r > 1 + t else (-1 if r < 1 / (1 + t) else 0)
    m = leave(v["ratio"], v["tolerance"])
    k = leave(v["best_ratio"], v["best_tolerance"])
    diags = {"timing_modes_subject": py_timing_modes(a),
             "timing_modes_other": py_timing_modes(b),
             "few_runs": min(len(a), len(b)) < 5,
             "wide_tolerance": v["tolerance"] > 0.10,
             "default_floor": not floor_given,
             "ratios_disagree": (m != 0) != (k != 0) or (m != 0 and m != k)}
    v["diagnostics"] = [d for d in DIAG_ORDER if diags[d]]
    n = min(len(a), len(b))
    dist = abs(abs(math.log(v["ratio"])) - math.log1p(v["tolerance"]))
    if ra == 0 and rb == 0:
        need = 5
    elif dist <= 0:
        need = 10000
    else:
        need = math.ceil(4.0 * 0.8630 * (ra * ra + rb * rb) / (dist * dist))
    need = max(need, 5)
    v["extra_runs"] = min(need - n, 10000) if need > n else 0
    return v


def rule_cases(rng, count):
    """Random comparisons of every kind the rule distinguishes: smooth
    clouds, two timing modes, a floor that dominates (arms of a few µs
    against floors of 25-100 µs), few runs, zero spread."""
    cases = []
    for i in range(count):
        kind = i % 5
        na, nb = rng.randint(2, 15), rng.randint(2, 15)
        centre = (rng.uniform(1.0, 60.0) if kind == 2
                  else rng.choice([40.0, 600.0, 25000.0]))
        shift = rng.choice([1.0, 1.0, 1.02, 1.08, 1.16, 1.5, 0.9, 0.7])
        spread = rng.choice([0.0, 0.002, 0.01, 0.05, 0.2])

        def arm(n, c):
            if kind == 1:               # two modes, 25 % apart
                return [round(c * rng.choice([1.0, 1.25]) *
                              (1 + rng.uniform(0, 0.01)), 4)
                        for _ in range(n)]
            return [round(c * (1 + rng.uniform(-spread, spread)), 4)
                    for _ in range(n)]
        a, b = arm(na, centre * shift), arm(nb, centre)
        line = {"a": a, "b": b}
        if kind == 2:
            line["floor_us"] = rng.choice([25, 50, 100])
        elif rng.random() < 0.5:
            line["floor_us"] = rng.choice([0, 3.5, 25])
        if rng.random() < 0.3:
            line["parity"] = rng.choice([0, 0.01, 0.04, 0.2])
        cases.append(line)
    return cases


def rule_against_python():
    rng = random.Random(4242)
    cases = rule_cases(rng, 5000)
    swapped = [dict(c, a=c["b"], b=c["a"]) for c in cases]
    text = "".join(json.dumps(c) + "\n" for c in cases + swapped).encode()
    code, out, err = run(["verdict", "--batch"], text)
    got = [json.loads(x) for x in out.splitlines()]
    ok(code == 0 and len(got) == 2 * len(cases),
       "rule: 10000 lines (5000 and their mirrors) answered", err)
    if len(got) != 2 * len(cases):
        return
    want = [py_written_form(c["a"], c["b"], float(c.get("floor_us", 25)),
                            float(c.get("parity", 0.04)), "floor_us" in c)
            for c in cases + swapped]
    fields = ["ratio", "best_ratio", "tolerance", "noise", "best_tolerance",
              "floor_us", "parity"]
    bad = [i for i, (g, w) in enumerate(zip(got, want))
           if g["outcome"] != w["outcome"] or
           not all(close(g[k], w[k]) for k in fields)]
    ok(not bad, "rule: every outcome and figure equals Python's",
       "line %d: %s\nvs %s" % (bad[0] + 1, got[bad[0]], want[bad[0]])
       if bad else "")
    bad = [i for i, (g, w) in enumerate(zip(got, want))
           if g["diagnostics"] != w["diagnostics"] or
           g["extra_runs"] != w["extra_runs"]]
    ok(not bad, "rule: diagnostics and extra_runs as docs/verdict.md "
       "defines them (%d of %d differ)" % (len(bad), len(got)),
       "line %d: %s\nvs %s" % (bad[0] + 1, got[bad[0]], want[bad[0]])
       if bad else "")
    mirror = {"win": "loss", "loss": "win", "parity": "parity"}
    n = len(cases)
    bad = [i for i in range(n)
           if got[n + i]["outcome"] != mirror[got[i]["outcome"]] or
           abs(got[n + i]["ratio"] * got[i]["ratio"] - 1) > 1e-12 or
           abs(got[n + i]["best_ratio"] * got[i]["best_ratio"] - 1) > 1e-12 or
           any(got[n + i][k] != got[i][k] for k in
               ("tolerance", "best_tolerance", "noise"))]
    ok(not bad, "rule: swapping the arms mirrors the outcome, reciprocal "
       "ratios, identical tolerances", "case %d: %s\nvs %s" % (
           bad[0] + 1, got[bad[0]], got[n + bad[0]]) if bad else "")
    floor_cases = [g for c, g in zip(cases, got)
                   if c.get("floor_us", 25) / min(q7(sorted(c["a"]), .5),
                                                   q7(sorted(c["b"]), .5))
                   > max(g["noise"], g["parity"])]
    ok(len(floor_cases) > 300 and
       all(g["tolerance"] > g["noise"] for g in floor_cases) and
       {g["outcome"] for g in floor_cases} >= {"parity", "loss"},
       "rule: %d floor-dominated cases, the floor sets their tolerance"
       % len(floor_cases))
    # Diagnostics sit beside the outcome: cases carrying each one still
    # reach outcomes other than parity (the outcome above is the rule's
    # alone, computed in Python without them).
    for d in ("timing_modes_subject", "few_runs", "wide_tolerance",
              "default_floor"):
        outs = {g["outcome"] for g in got if d in g["diagnostics"]}
        ok(len(outs) >= 2 and outs != {"parity"},
           "rule: lines with %s reach %s" % (d, sorted(outs)))


def batch_mixed_and_paths():
    good = '{"a":[566,568,576,690,722],"b":[587,700,712,718,725]}'
    mixed = [good, "nope", '{"a":[1],"b":[2,3]}', good.replace(" ", ""),
             '{ "b" : [587, 700, 712, 718, 725] , "a" : [566,568,576,690,722]'
             ' , "floor_us" : 25.0 , "parity" : 4e-2 }',
             '{"a":[5.66e2,568,576,690,722],"b":[587,700,712,718,725]}',
             '{"a":[1,2],"b":[1,2],"a":[1,2]}',
             '{"a":[01,2],"b":[1,2]}',
             '{"a":[1.,2],"b":[1,2]}',
             '{"a":[-0,2],"b":[1,2]}',
             '{"a":[1e999,2],"b":[1,2]}',
             '{"a":[1e-400,2],"b":[1,2]}',
             '{"a":[123456789012345678901234,2],"b":[1,2]}',
             '{"a":[12345678901234567890.5,2],"b":[1,2]}',
             '{"a":[0.1234567890123456789,2],"b":[1,2]}',
             '{"\\u0061":[1,2],"b":[1,2]}',
             '{"a":[1,2],"b":[1,2],"floor_us":1E+2}',
             '{"a":[1,2],"b":[1,2]',
             good + "\r", "", good]
    text = "\n".join(mixed).encode()
    code, fast, err = run(["verdict", "--batch"], text)
    code2, slow, err2 = run(["verdict", "--batch"], text,
                            env={"PARITY_BATCH_JANSSON": "1"})
    fl = fast.splitlines()
    ok(code == 1 and code2 == 1, "batch mixed: exit 1 on both paths",
       err + err2)
    ok(len(fl) == len(mixed), "batch mixed: one line out per line in (%d)"
       % len(mixed), fast)
    ok(fast == slow, "batch mixed: the fast path and jansson agree byte for "
       "byte", "\n".join(a + "\n  vs " + b for a, b in
                         zip(fl, slow.splitlines()) if a != b))
    errs = [json.loads(x).get("line") for x in fl if '"error"' in x]
    ok(errs == [2, 3, 7, 8, 9, 10, 11, 12, 13, 18, 20],
       "batch mixed: errors carry their own line numbers, in order",
       str(errs))
    ok(json.loads(fl[0]) == json.loads(fl[-1]) and
       json.loads(fl[0])["outcome"] == "parity",
       "batch mixed: good lines answered around the bad ones")

    rng = random.Random(7)
    lines, _ = random_lines(rng, 1000)
    text = "".join(json.dumps(x) + "\n" for x in lines).encode()
    _, fast, _ = run(["verdict", "--batch"], text)
    _, slow, _ = run(["verdict", "--batch"], text,
                     env={"PARITY_BATCH_JANSSON": "1"})
    ok(fast == slow and fast.count("\n") == 1000,
       "batch: fast path equals jansson on 1000 random lines")

    # Mutated lines: both paths must give the same bytes, errors included.
    rng = random.Random(11)
    alphabet = '{}[],:"ab floor_us parity 0123456789.eE+-\t\\u'
    bases = ['{"a":[566,568,576,690,722],"b":[587,700,712,718,725]}',
             '{"a":[1.5e2,2.25,3],"b":[0.5,7E-1],"floor_us":0,"parity":0.04}',
             '{ "b" : [ 1 , 2 ] , "a" : [ 3 , 4 ] , "parity" : 1e-2 }']
    mutated = []
    for _ in range(6000):
        c = list(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            pos, op = rng.randrange(len(c)), rng.random()
            if op < 0.4:
                del c[pos]
            elif op < 0.8:
                c.insert(pos, rng.choice(alphabet))
            else:
                c[pos] = rng.choice(alphabet)
        mutated.append("".join(c))
    mutated += ['{"a":[1,2],"b":[1,2],"floor_us":-0}',
                '{"a":[1,2],"b":[1,2],"parity":-0.0}']
    text = ("\n".join(mutated) + "\n").encode()
    _, fast, _ = run(["verdict", "--batch"], text)
    _, slow, _ = run(["verdict", "--batch"], text,
                     env={"PARITY_BATCH_JANSSON": "1"})
    diff = [(m, a, b) for m, a, b in zip(mutated, fast.splitlines(),
                                         slow.splitlines()) if a != b]
    ok(not diff and fast.count("\n") == len(mutated) and
       '"outcome"' in fast and '"error"' in fast,
       "batch: fast path equals jansson on %d mutated lines" % len(mutated),
       "\n".join("%s\n  %s\n  %s" % d for d in diff[:3]))

    code, out, _ = run(["verdict", "--batch", "--floor-us", "0", "--parity",
                        "0.1"], b'{"a":[1,2],"b":[1,2]}\n'
                       b'{"a":[1,2],"b":[1,2],"parity":0.2}\n')
    got = [json.loads(x) for x in out.splitlines()]
    ok(code == 0 and got[0]["floor_us"] == 0 and got[0]["parity"] == 0.1 and
       got[1]["parity"] == 0.2 and "default_floor" not in got[0]["diagnostics"],
       "batch: --floor-us/--parity are defaults that lines override", out)

    big = ('{"a":[%s],"b":[1,2]}\n' % ",".join(["1"] * (1048577))).encode()
    code, out, _ = run(["verdict", "--batch"], big)
    ok(code == 1 and '"error":"\\"a\\" has 1048577 samples, more than the '
       'limit of 1048576"' in out, "batch: an arm over VD_MAX_SAMPLES", out)

    # Beyond two arms' worth of values, refused before jansson spends
    # about 40 bytes a value on it (1.4 GB for 64 MiB of "1,").
    many = b'{"a":[' + b"1," * (2 * 1048576 + 9) + b'1],"b":[1,2]}\n'
    code, out, _ = run(["verdict", "--batch"], many + b'{"a":[1,2],"b":[1,2]}')
    ol = out.splitlines()
    ok(code == 1 and len(ol) == 2 and
       ol[0] == '{"line":1,"error":"2097163 commas: more values than two '
       'arms of at most 1048576 samples"}' and '"outcome"' in ol[1],
       "batch: a line of more values than two arms can hold is refused "
       "cheaply", out[:300])

    long_line = b'{"a":[' + b"1," * (33 << 20) + b'1],"b":[1,2]}\n'
    code, out, _ = run(["verdict", "--batch"],
                       long_line + b'{"a":[1,2],"b":[1,2]}\n')
    ol = out.splitlines()
    ok(code == 1 and len(ol) == 2 and
       ol[0] == '{"line":1,"error":"line longer than 67108863 bytes"}' and
       '"outcome"' in ol[1], "batch: a line over 64 MiB is refused, the "
       "next is answered", out[:300])


def system_errors():
    full = open("/dev/full", "wb")
    args = ["verdict", "--a", "1,2", "--b", "1,2"]
    code, _, err = run(args, stdout=full)
    ok(code == 3 and "parity verdict: writing the table failed" in err,
       "stdout on /dev/full: exit 3, writing the table failed", err)
    code, _, err = run(args + ["--json"], stdout=full)
    ok(code == 3 and "parity verdict: writing the JSON verdict failed" in err,
       "--json on /dev/full: exit 3", err)
    code, _, err = run(["verdict", "--batch"], b'{"a":[1,2],"b":[1,2]}\n',
                       stdout=full)
    ok(code == 3 and "parity verdict: writing stdout: No space left on "
       "device" in err, "--batch on /dev/full: exit 3", err)
    code, _, err = run(["import", "hyperfine",
                        os.path.join(EXAMPLES, "hyperfine-modes.json")],
                       stdout=full)
    ok(code == 3 and "parity import: writing the output failed (or out of "
       "memory)" in err, "import on /dev/full: exit 3", err)
    for args, who in ((["--help"], "parity: writing stdout"),
                      (["--version"], "parity: writing stdout"),
                      (["verdict", "--help"],
                       "parity verdict: writing the usage failed"),
                      (["help", "import"],
                       "parity import: writing the usage failed")):
        code, _, err = run(args, stdout=full)
        ok(code == 3 and who + ": No space left on device" in err,
           "parity %s on /dev/full: exit 3, not a silent 0" % " ".join(args),
           err)
    full.close()
    # stdout and stdin closed (>&- and <&-), not merely full.
    p = subprocess.run([PARITY, "verdict", "--batch"],
                       input=b'{"a":[1,2],"b":[1,2]}\n',
                       stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1),
                       timeout=30)
    ok(p.returncode == 3 and b"parity verdict: writing stdout: Bad file "
       b"descriptor" in p.stderr, "--batch >&-: exit 3, EBADF named",
       p.stderr)
    p = subprocess.run([PARITY, "verdict", "--a", "1,2", "--b", "1,2"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=lambda: os.close(1), timeout=30)
    ok(p.returncode == 3 and b"parity verdict: writing the table failed" in
       p.stderr, "verdict >&-: exit 3", p.stderr)
    p = subprocess.run([PARITY, "verdict", "--batch"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=lambda: os.close(0),
                       timeout=30)
    ok(p.returncode == 3 and b"parity verdict: reading stdin: Bad file "
       b"descriptor" in p.stderr, "--batch <&-: exit 3", p.stderr)
    d = os.open("/", os.O_RDONLY)
    p = subprocess.run([PARITY, "verdict", "--batch"], stdin=d,
                       capture_output=True, timeout=30)
    os.close(d)
    ok(p.returncode == 3 and b"parity verdict: reading stdin: Is a "
       b"directory" in p.stderr, "--batch with a directory on stdin: exit 3",
       p.stderr)


def import_bounds(tmp):
    """The limits of import: samples per arm, benchmarks per file."""
    path = os.path.join(tmp, "manytimes.json")
    with open(path, "w") as f:
        f.write(hf(hres("a", T3), hres("b", [0.001] * 1048577)))
    code, _, err = run(["import", "hyperfine", path])
    ok(code == 1 and err.endswith('results[1] ("b"): more than 1048576 '
                                  "times\n"),
       "hyperfine: an arm over VD_MAX_SAMPLES", err)
    path = os.path.join(tmp, "manybench.json")
    with open(path, "w") as f:
        f.write(gb(*[{"name": "B%d" % i, "real_time": 1.0}
                     for i in range(100001)]))
    code, _, err = run(["import", "gbench", path, path])
    ok(code == 1 and "manybench.json: more than 100000 benchmarks" in err,
       "gbench: more than 100000 benchmarks in a file", err)

    # A command that cannot be judged leaves stdout empty, not half a
    # table followed by an error.
    code, out, err = run(["import", "hyperfine",
                          os.path.join(tmp, "range.json")])
    ok(code == 1 and out == "" and "samples out of range" in err,
       "hyperfine: every verdict before any output", out + err)

    # The documented maximum of commands is printed, header and all.
    path = os.path.join(tmp, "maxcommands.json")
    with open(path, "w") as f:
        f.write(hf(*[hres("c%d" % i, [0.001, 0.002]) for i in range(100000)]))
    code, out, err = run(["import", "hyperfine", path])
    ok(code == 0 and out.count("\nverdict: c") == 99999 and
       "\nc99999 " in out, "hyperfine: 100000 commands, the limit, are all "
       "judged (was exit 3: the table had no room for its header)", err)

    # A pipe has no size to check: the read itself is bounded.
    code, _, err = run(["import", "hyperfine", "/dev/stdin"],
                       b" " * ((256 << 20) + 1))
    ok(code == 1 and "parity import: /dev/stdin: more than the limit of "
       "268435456 bytes" in err, "hyperfine: a pipe beyond 256 MiB is "
       "refused, not read forever", err)

    # Names are never cut: two long commands stay two rows.
    path = os.path.join(tmp, "longnames.json")
    la, lb = "x" * 300 + "A", "x" * 300 + "B"
    with open(path, "w") as f:
        f.write(hf(hres(la, T3), hres(lb, T3)))
    code, out, err = run(["import", "hyperfine", path])
    ok(code == 0 and ("\n%s " % la) in out and ("\n%s " % lb) in out,
       "hyperfine: 301-byte command names printed whole in the table", out)
    path = os.path.join(tmp, "gb-long.json")
    with open(path, "w") as f:
        f.write(gb(git(la, 1.0), git(la, 1.1), git(lb, 1.0), git(lb, 1.1)))
    code, out, err = run(["import", "gbench", path, path])
    ok(code == 0 and ("\n%s " % la) in out and ("\n%s " % lb) in out,
       "gbench: long benchmark names printed whole", out)

    # time_unit: the same times written in ns, us, ms and s are one
    # benchmark at ratio 1; older files (no run_type) skip aggregate_name.
    units = {"ns": 1e6, "us": 1e3, "ms": 1.0, "s": 1e-3}
    for unit, k in units.items():
        path = os.path.join(tmp, "gb-%s.json" % unit)
        with open(path, "w") as f:
            f.write(gb(*[git("BM_u", t * k, unit=unit) for t in
                         (2.0, 2.5, 3.0)]))
    base = os.path.join(tmp, "gb-ms.json")
    for unit in units:
        code, out, err = run(["import", "gbench", base,
                              os.path.join(tmp, "gb-%s.json" % unit),
                              "--json"])
        b = (json.loads(out or "{}").get("benchmarks") or [{}])[0]
        v = b.get("verdict", {}).get("baseline", {})
        ok(code == 0 and abs(v.get("ratio", 0) - 1) < 1e-12 and
           v.get("other", {}).get("median") == 2500.0,
           "gbench: time_unit %s converted to µs (2.5 ms = 2500 µs)" % unit,
           out + err)
    path = os.path.join(tmp, "gb-old.json")
    with open(path, "w") as f:
        f.write(gb({"name": "BM_o", "real_time": 10.0},
                   {"name": "BM_o", "real_time": 11.0},
                   {"name": "BM_o_mean", "aggregate_name": "mean",
                    "real_time": 999.0},
                   {"name": "BM_o", "real_time": 12.0}))
    code, out, err = run(["import", "gbench", path, path, "--json"])
    b = (json.loads(out or "{}").get("benchmarks") or [{}])
    other = b[0].get("verdict", {}).get("baseline", {}).get("other", {})
    ok(code == 0 and len(b) == 1 and other.get("n") == 3 and
       other.get("max") == 0.012, "gbench: a file without run_type: "
       "entries with aggregate_name skipped, ns by default", out + err)

    # A file name that is not UTF-8 still gives JSON (U+FFFD in "file").
    path = os.fsencode(tmp) + b"/r\xff.json"
    with open(path, "w") as f:
        f.write(FILES["hf-good.json"])
    code, out, err = run(["import", "hyperfine", os.fsdecode(path), "--json"])
    ok(code == 0 and json.loads(out or "{}").get("file", "").endswith(
        "/r\ufffd.json"), "hyperfine --json: a non-UTF-8 file name is "
       "written with U+FFFD, not refused as a write failure", out + err)
    path = os.fsencode(tmp) + b"/g\xff.json"
    with open(path, "w") as f:
        f.write(FILES["gb-other.json"])
    code, out, err = run(["import", "gbench", os.fsdecode(path),
                          os.fsdecode(path), "--json"])
    d = json.loads(out or "{}")
    ok(code == 0 and d.get("baseline", "").endswith("/g\ufffd.json") and
       d.get("contender") == d.get("baseline"),
       "gbench --json: non-UTF-8 file names written with U+FFFD", out + err)


def out_of_memory(tmp):
    """Allocation failures under an address-space limit: exit 3 and a
    message, never a crash or exit 1. Not under ASan, whose shadow memory
    needs more address space than any such limit leaves."""
    with open(PARITY, "rb") as f:
        if b"__asan_init" in f.read():
            ok(True, "# SKIP out-of-memory checks under ASan")
            return
    import resource

    def limit(mb):
        return lambda: resource.setrlimit(resource.RLIMIT_AS,
                                          (mb << 20, mb << 20))
    line = b'{"a":[' + b"1," * (1 << 20) + b'1],"b":[1,2],"x":1}\n'
    p = subprocess.run([PARITY, "verdict", "--batch"], input=line,
                       capture_output=True, preexec_fn=limit(48), timeout=60)
    ok(p.returncode == 3 and p.stdout == b'{"line":1,"error":"out of memory '
       b'parsing the line"}\n' and p.stderr == b"parity verdict: out of "
       b"memory answering a line (its error line says where)\n",
       "batch: jansson out of memory on a line: its error line, exit 3",
       p.stdout[:200] + p.stderr)
    big = b'{"a":[' + b"1," * (20 << 20) + b'1],"b":[1,2]}\n'
    p = subprocess.run([PARITY, "verdict", "--batch"], input=big,
                       capture_output=True, preexec_fn=limit(48), timeout=60)
    ok(p.returncode == 3 and p.stderr.startswith(
        b"parity verdict: out of memory for a line of "),
       "batch: no memory to hold a long line: exit 3", p.stderr)
    path = os.path.join(tmp, "oom.json")
    with open(path, "w") as f:
        f.write(hf(hres("a", [0.001] * 3000000), hres("b", T3)))
    for mb, what in ((32, "reading"), (64, "parsing")):
        p = subprocess.run([PARITY, "import", "hyperfine", path],
                           capture_output=True, preexec_fn=limit(mb),
                           timeout=60)
        ok(p.returncode == 3 and p.stderr == (
            "parity import: %s: out of memory %s it\n" % (path, what)
        ).encode(), "import: out of memory %s a file: exit 3" % what,
            p.stderr)


def imports():
    ex = lambda name: os.path.join(EXAMPLES, name)
    code, out, err = run(["import", "hyperfine", ex("hyperfine-modes.json"),
                          "--json"])
    d = json.loads(out or "{}")
    v = d.get("results", [{}, {}])[1].get("verdict", {}).get(
        "cpp/edit_distance", {})
    ok(code == 0 and d.get("reference") == "cpp/edit_distance" and
       v.get("outcome") == "parity", "hyperfine: the worked example file is "
       "parity against its reference", out + err)
    ref = reference_verdict([566, 568, 576, 690, 722],
                            [587, 700, 712, 718, 725])
    ok(all(abs(v.get(k, -1) - ref[k]) < 1e-9 for k in ref if k != "outcome"),
       "hyperfine: seconds become µs; figures equal the rule's", out)
    ok("verdict" not in d["results"][0],
       "hyperfine: the reference gets a summary, no verdict")

    # The real export: the same verdict as parity verdict on its times.
    with open(ex("hyperfine-spawn.json")) as f:
        res = json.load(f)["results"]
    a = ",".join(repr(t * 1e6) for t in res[1]["times"])
    b = ",".join(repr(t * 1e6) for t in res[0]["times"])
    _, vout, _ = run(["verdict", "--a", a, "--b", b, "--json"])
    code, out, err = run(["import", "hyperfine", ex("hyperfine-spawn.json"),
                          "--json"])
    d = json.loads(out or "{}")
    got = d["results"][1]["verdict"][res[0]["command"]]
    want = json.loads(vout or "{}")
    ok(code == 0 and all(got[k] == want.get(k) for k in got),
       "hyperfine: a real export gives parity verdict's verdict on its times",
       "%s\n%s" % (got, want))
    code, out, err = run(["import", "hyperfine", ex("hyperfine-spawn.json")])
    ok(code == 0 and out.startswith("arm ") and "reference: true" in out and
       "verdict: sh -c true vs true:" in out, "hyperfine: table output", out)

    code, out, err = run(["import", "gbench", ex("gbench-baseline.json"),
                          ex("gbench-contender.json"), "--json"])
    d = json.loads(out or "{}")
    got = {b["name"]: b["verdict"]["baseline"]["outcome"]
           for b in d.get("benchmarks", [])}
    ok(code == 0 and got == {"BM_Copy/64": "parity", "BM_Hash/4096": "loss",
                             "BM_Sort/1024": "win"},
       "gbench examples: parity, loss (16 %% slower), win", out + err)
    ok(d.get("only_in_baseline") == ["BM_Parse"] and
       d.get("only_in_contender") == ["BM_Format"] and
       d.get("floor_us") == 0.0, "gbench: names in one file only; floor 0 "
       "by default", out)
    sort = [b for b in d["benchmarks"] if b["name"] == "BM_Sort/1024"][0]
    with open(ex("gbench-baseline.json")) as f:
        base = [x["real_time"] for x in json.load(f)["benchmarks"]
                if x["run_name"] == "BM_Sort/1024" and
                x["run_type"] == "iteration"]
    ok(sort["verdict"]["baseline"]["other"]["min"] == min(base) and
       sort["verdict"]["baseline"]["other"]["n"] == len(base),
       "gbench: only iteration entries are samples, in time_unit us", sort)
    code, out, err = run(["import", "gbench", ex("gbench-baseline.json"),
                          ex("gbench-contender.json"), "--floor-us", "25"])
    ok(code == 0 and "BM_Hash/4096" in out and " loss" not in out,
       "gbench --floor-us 25: a 25 µs floor hides a 1 µs benchmark's loss",
       out)


def docs_examples():
    """The examples in docs/commands are the binary's output, byte for
    byte, and every option of --help has a row in its page's table."""
    import re
    docs = os.path.join(SRC, "..", "..", "docs", "commands")
    with open(os.path.join(docs, "verdict.md"), encoding="utf-8") as f:
        vdoc = f.read()
    with open(os.path.join(docs, "import.md"), encoding="utf-8") as f:
        idoc = f.read()
    m = re.search(r"\$ parity (verdict --a \S+ --b \S+ --floor-us 25)\n(.*?)```",
                  vdoc, re.S)
    code, out, err = run(m.group(1).split()) if m else (-1, "", "")
    ok(m and code == 0 and out == m.group(2),
       "docs/commands/verdict.md: the table example is the output",
       out + err)
    m = re.search(r"\$ parity import gbench (\S+) (\S+)\n(.*?)```", idoc, re.S)
    if m:
        p = subprocess.run([PARITY, "import", "gbench", m.group(1), m.group(2)],
                           capture_output=True, cwd=os.path.join(SRC, "..", ".."),
                           timeout=60)
        got = (p.stdout + p.stderr).decode("utf-8", "replace")
    ok(m and got == m.group(3),
       "docs/commands/import.md: the gbench example is the output",
       got if m else "no example found")
    for verb, doc in (("verdict", vdoc), ("import", idoc)):
        _, usage, _ = run([verb, "--help"])
        helped = set(re.findall(r"--[a-z][a-z_-]*", usage))
        documented = set(re.findall(r"^\| `(--[a-z][a-z-]*)", doc, re.M))
        ok(helped - {"--help", "--benchmark_format", "--benchmark_out",
                     "--benchmark_repetitions", "--export-json",
                     "--command-name"} == documented,
           "parity %s: the options of --help are the rows of its page" % verb,
           "help: %s\ndocs: %s" % (sorted(helped), sorted(documented)))


def main():
    if not PARITY or not os.access(PARITY, os.X_OK):
        print("Bail out! no parity binary at %r (set PARITY)" % PARITY)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        table(tmp)
        import_bounds(tmp)
        out_of_memory(tmp)
    worked_example()
    batch_against_python()
    rule_against_python()
    batch_mixed_and_paths()
    system_errors()
    imports()
    docs_examples()
    return plan()


if __name__ == "__main__":
    sys.exit(main())
