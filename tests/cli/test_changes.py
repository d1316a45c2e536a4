#!/usr/bin/env python3
"""test_changes.py -- `parity changes` through the built binary (TAP).

    test_changes.py PARITY

1. --otava against Apache Otava's published tests: every series and
   parameter set of otava_vectors.json gives Otava's indexes exactly,
   from a CSV file and from JSON Lines;
2. Parity's method on a 10 % step with 1 % noise: one change point,
   index exactly the first point after, the labels either side, ratio
   x1.10, outcome loss; no change point on pure noise; a timing mode
   (medians jumping, the fastest runs still) is not a change with "min"
   given, and --otava, which has no such filter, reports it;
3. the table, CSV quoting, a time column other than the first;
4. every error a user can hit, with its exact message and exit status.
"""
import json
import os
import random
import subprocess
import sys

PARITY = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok  # noqa: E402

TMP = pf.tempdir("parity-changes-test-")


def path(name):
    return os.path.join(TMP, name)


def write(name, text):
    with open(path(name), "w") as f:
        f.write(text)
    return path(name)


def changes(*args, stdin=None):
    r = subprocess.run([PARITY, "changes"] + list(args), input=stdin,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def cps(*args, stdin=None, metric=0):
    """The change points of --json's metric, or None (said)."""
    rc, out, err = changes(*(list(args) + ["--json"]), stdin=stdin)
    try:
        return json.loads(out)["metrics"][metric]["change_points"]
    except (ValueError, KeyError, IndexError):
        pf.diag("rc %d, stderr %s" % (rc, err.strip()))
        return None


def csv_of(values, label="t"):
    return "time,value\n" + "".join("%s%02d,%r\n" % (label, i, v)
                                    for i, v in enumerate(values))


def otava_vectors():
    with open(os.path.join(HERE, "otava_vectors.json")) as f:
        doc = json.load(f)
    for c in doc["cases"]:
        series = doc["series"][c["series"]]
        args = ["--otava", "--window", str(c["window"]), "--max-p",
                c["max_p"], "--min-magnitude", c["min_magnitude"]]
        f = write(c["series"] + ".csv", csv_of(series))
        got = [p["index"] for p in cps(f, *args) or []]
        ok(got == c["indexes"], "%s: CSV %s" % (c["test"], got))
        lines = "".join("%r\n" % v for v in series)
        got = [p["index"] for p in cps("--jsonl", *args, stdin=lines) or []]
        ok(got == c["indexes"], "%s: JSON Lines %s" % (c["test"], got))


def step_series(seed, n=40, at=24, step=1.10, noise=0.01):
    rng = random.Random(seed)
    return [round(100.0 * (step if i >= at else 1.0) *
                  (1 + rng.gauss(0, noise)), 4) for i in range(n)]


def parity_method():
    exact, one, loss = 0, 0, 0
    for seed in range(20):
        got = cps(write("step.csv", csv_of(step_series(seed), "c"))) or []
        one += len(got) == 1
        exact += len(got) == 1 and got[0]["index"] == 24
        loss += len(got) == 1 and got[0]["outcome"] == "loss" and \
            not got[0]["within_noise"]
    ok(one == 20 and exact == 20 and loss == 20,
       "a 10 %% step, 1 %% noise, 20 seeds: one change point each (%d), at "
       "index 24, the first point after (%d), a loss (%d)"
       % (one, exact, loss))
    got = cps(write("step.csv", csv_of(step_series(1), "c")))[0]
    ok(got["label_before"] == "c23" and got["label_after"] == "c24" and
       abs(got["magnitude"] - 1.10) < 0.01 and got["p_value"] < 1e-10,
       "its labels c23 -> c24, x%.4f, p %.3g" % (got["magnitude"],
                                                 got["p_value"]))
    noise = 0
    for seed in range(20):
        noise += len(cps(write("noise.csv", csv_of(
            step_series(seed, n=100, step=1.0)))) or [])
    ok(noise == 0, "pure noise, 20 series of 100 points: %d change points"
       % noise)
    # Timing modes: each run's median is in the fast or the slow mode
    # (30 % apart), in spells; its fastest sample stays put.
    rng = random.Random(7)
    pts, slow = [], False
    for i in range(60):
        if i % 10 == 0:
            slow = not slow
        med = 100.0 * (1.3 if slow else 1.0) * (1 + rng.gauss(0, 0.01))
        pts.append({"median": round(med, 3),
                    "min": round(95.0 * (1 + rng.gauss(0, 0.005)), 3),
                    "label": "r%02d" % i})
    lines = "".join(json.dumps(p) + "\n" for p in pts)
    ok(cps("--jsonl", stdin=lines) == [],
       "timing modes with each run's min: no change point")
    ok(len(cps("--jsonl", "--otava", stdin=lines) or []) >= 3,
       "--otava, without the filter, reports the modes' spells")
    # A drift of 0.5 % a point from point 15: one change point, a trend.
    rng = random.Random(4)
    drift = "".join("%r\n" % round(100 * 1.005 ** max(0, i - 15) *
                                   (1 + rng.gauss(0, 0.003)), 3)
                    for i in range(80))
    got = cps("--jsonl", stdin=drift) or []
    ok(len(got) == 1 and got[0].get("kind") == "trend" and
       15 <= got[0]["index"] <= 25 and
       0.004 < got[0].get("per_point", 0) < 0.006 and
       got[0]["steps"] >= 3 and got[0]["outcome"] == "loss",
       "a drift of 0.5 %% a point: one change point, a trend (%s)"
       % [(c.get("kind"), c["index"], c.get("per_point"), c.get("steps"))
          for c in got])
    got = cps(write("step.csv", csv_of(step_series(2), "c"))) or []
    ok([c.get("kind") for c in got] == ["step"], "a step says kind step")
    nomin = "".join(json.dumps({"median": p["median"]}) + "\n" for p in pts)
    ok([c["index"] for c in cps("--jsonl", "--otava", stdin=nomin) or []] ==
       [c["index"] for c in cps("--jsonl", "--otava", stdin=lines) or []],
       "--otava reads the medians alone")


def table_and_csv():
    f = write("q.csv", 'commit,"time, local",ms\n' + "".join(
        '"c%02d","2024-01-%02d, 10:00",%r\n' % (i, i + 1, v)
        for i, v in enumerate(step_series(3))))
    got = cps(f, "--time", "time, local")
    ok(got and got[0]["label_after"] == "2024-01-25, 10:00",
       "a quoted time column with a comma in its name and values: %s"
       % (got and got[0]["label_after"]))
    rc, out, err = changes(f)
    lines = out.splitlines()
    ok(rc == 0 and lines[0] == "Parity's method: window 40, p <= 0.0001, "
       "change >= 2 %" and lines[2] == "ms: 40 points, 1 change point" and
       lines[3].split() == ["index", "before", "after", "level", "before",
                            "level", "after", "change", "p-value",
                            "outcome"] and
       lines[4].split()[:3] == ["24", "c23", "c24"] and
       lines[4].split()[-1] == "loss",
       "the table: its header, the metric's line and the row:\n%s" % out)
    f = write("two.csv", "time,a,b,host\n" + "".join(
        "t%02d,%r,%r,h1\n" % (i, v, 5.0 + (i % 2) * 0.01)
        for i, v in enumerate(step_series(4))))
    rc, out, err = changes(f, "--json")
    doc = json.loads(out) if rc == 0 else {}
    ok([m["metric"] for m in doc.get("metrics", [])] == ["a", "b"] and
       len(doc["metrics"][0]["change_points"]) == 1 and
       doc["metrics"][1]["change_points"] == [],
       "every numeric column is a metric, a text one is not: %s"
       % [m["metric"] for m in doc.get("metrics", [])])
    got = cps(f, "--metric", "b")
    ok(got == [], "--metric b alone: no change point")


def errors():
    good = write("good.csv", csv_of(step_series(5)))
    cases = [
        ((path("none.csv"),), None, 1, "parity changes: %s: cannot open: No "
         "such file or directory" % path("none.csv")),
        ((TMP,), None, 1, "parity changes: %s: is a directory" % TMP),
        ((write("empty.csv", ""),), None, 1, "parity changes: %s: empty"
         % path("empty.csv")),
        ((write("blank.csv", "\n\n"),), None, 1, "parity changes: %s: empty, "
         "no header row" % path("blank.csv")),
        ((write("head.csv", "time,v\n"),), None, 1, "parity changes: %s: a "
         "header and no rows" % path("head.csv")),
        ((write("quote.csv", 'time,v\n"t1,1\n'),), None, 1, "parity changes: "
         "%s:2: a quote is not closed on its line" % path("quote.csv")),
        ((write("after.csv", 'time,v\n"t1"x,1\n'),), None, 1,
         "parity changes: %s:2: text after a quoted field" % path("after.csv")),
        ((write("fields.csv", "time,v\nt1,1\nt2,1,3\n"),), None, 1,
         "parity changes: %s:3: 3 fields, the header has 2"
         % path("fields.csv")),
        ((write("nan.csv", "time,v\nt1,1\nt2,1.5\nt3,fast\n"),), None, 1,
         "parity changes: %s:4: column \"v\": \"fast\" is not a number"
         % path("nan.csv")),
        ((write("inf.csv", "time,v\nt1,1\nt2,inf\n"),), None, 1,
         "parity changes: %s:3: column \"v\": \"inf\" is not a number"
         % path("inf.csv")),
        ((write("words.csv", "time,v\nt1,x\n"),), None, 1,
         "parity changes: %s: no column of numbers to look at (the first "
         "row has none; --metric COL)" % path("words.csv")),
        ((good, "--metric", "ms"), None, 1, "parity changes: %s: no metric "
         "column \"ms\" (columns: time, value)" % good),
        ((good, "--metric", "time"), None, 1, "parity changes: %s: no metric "
         "column \"time\" (columns: time, value)" % good),
        ((good, "--time", "when"), None, 1, "parity changes: %s: no time "
         "column \"when\" (columns: time, value)" % good),
        ((write("few.csv", csv_of([1, 2, 3, 4, 5])),), None, 1,
         "parity changes: %s: 5 points; Parity's method needs at least 6"
         % path("few.csv")),
        ((write("one.csv", csv_of([1])), "--otava"), None, 1,
         "parity changes: %s: 1 point; Otava's method needs at least 2"
         % path("one.csv")),
        ((write("zero.csv", csv_of([1, 2, 0, 4, 5, 6])),), None, 1,
         "parity changes: %s:4: \"value\" is 0: Parity's method needs times "
         "above 0 (--otava takes any number)" % path("zero.csv")),
        ((good, "--window", "1"), None, 1, "parity changes: --window 1: "
         "outside 2..1000"),
        ((good, "--window", "1001"), None, 1, "parity changes: --window 1001: "
         "outside 2..1000"),
        ((good, "--window", "7.5"), None, 2, "parity changes: --window 7.5: "
         "not a whole number"),
        ((good, "--window", "w"), None, 2, "parity changes: --window \"w\": "
         "not a number"),
        ((good, "--max-p", "0"), None, 1, "parity changes: --max-p 0: "
         "outside (0..1]"),
        ((good, "--max-p", "1.5"), None, 1, "parity changes: --max-p 1.5: "
         "outside (0..1]"),
        ((good, "--min-magnitude", "-0.1"), None, 1, "parity changes: "
         "--min-magnitude -0.1: outside 0..1e+06"),
        ((good, "--floor", "-1"), None, 1, "parity changes: --floor -1: "
         "outside 0..1e+300"),
        ((good, "--floor", "5", "--otava"), None, 2, "parity changes: "
         "--floor is Parity's filter; --otava has none"),
        ((), None, 2, "parity changes: which series? FILE.csv, or --jsonl "
         "with a file or standard input (parity changes --help)"),
        ((good, good), None, 2, "parity changes: unexpected argument \"%s\" "
         "(parity changes --help)" % good),
        (("--jsonl", "--metric", "v"), "1\n", 2, "parity changes: --time and "
         "--metric are for CSV; a JSON Lines series is one metric"),
        (("--jsonl",), "", 1, "parity changes: standard input: empty"),
        (("--jsonl",), "\n\n", 1, "parity changes: standard input: no "
         "points"),
        (("--jsonl",), "1\n2\n{x\n", 1, "parity changes: standard input:3: "
         "not JSON: string or '}' expected near 'x'"),
        (("--jsonl",), "1\n\"a\"\n", 1, "parity changes: standard input:2: "
         "not a number or an object with \"median\""),
        (("--jsonl",), "1\n{\"min\": 1}\n", 1, "parity changes: standard "
         "input:2: an object without \"median\""),
        (("--jsonl",), "{\"median\": \"1\"}\n", 1, "parity changes: standard "
         "input:1: \"median\" is not a number"),
        (("--jsonl",), "{\"median\": 1, \"min\": \"0\"}\n", 1,
         "parity changes: standard input:1: \"min\" is not a number"),
        (("--jsonl",), "{\"median\": 1, \"label\": 3}\n", 1,
         "parity changes: standard input:1: \"label\" is not a string"),
        (("--jsonl",), "1\n\0\n", 1, "parity changes: standard input: holds "
         "a NUL byte: not text"),
        (("--jsonl", "--otava"), "1\n2\nnull\n", 1, "parity changes: standard "
         "input:3: not a number or an object with \"median\""),
    ]
    for args, stdin, want_rc, want in cases:
        rc, out, err = changes(*args, stdin=stdin)
        ok(rc == want_rc and err.strip() == want and out == "",
           "%s -> %d: %s (got %d: %s)" % (" ".join(args)[-60:] or "(none)",
                                         want_rc, want, rc, err.strip()))
    rc, out, err = changes("--jsonl", "--bogus")
    ok(rc == 2 and err.strip() == "parity changes: unknown option "
       "\"--bogus\" (parity changes --help)", "an unknown option: %s"
       % err.strip())
    rc, out, err = changes("--help")
    ok(rc == 0 and out.startswith("usage: parity changes FILE.csv"),
       "--help prints the usage")
    big = "".join("%d\n" % (100 + (i % 3)) for i in range(1200))
    rc, out, err = changes("--jsonl", stdin=big)
    ok(rc == 0 and err.strip() == "parity changes: note: 1200 points; "
       "Parity's method looks at the newest 1000 (--otava slides a window "
       "over all)", "a series longer than 1000 points: %s" % err.strip())


def main():
    pf.need(PARITY)
    otava_vectors()
    parity_method()
    table_and_csv()
    errors()
    pf.finish()


if __name__ == "__main__":
    main()
