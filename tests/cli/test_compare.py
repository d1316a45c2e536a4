#!/usr/bin/env python3
"""test_compare.py -- `parity compare` with hyperfine's command line,
through the built binary, emitting TAP.

    test_compare.py PARITY TESTPROG

Real processes only (parity-testprog of tests/helpers, /bin/sh): each
check runs the real `parity compare` and reads back what it printed, the
files it exported and what the commands themselves wrote. Timing is never
judged here (tests/agent/test_harness.py does that); names, shells,
hooks, parameter values, exports and every command-line error are.
"""
import csv
import io
import json
import os
import re
import shlex
import subprocess
import sys

PARITY, PROG = sys.argv[1:3]
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, tap  # noqa: E402,F401

TMP = pf.tempdir("parity-compare-test-")
# Each run of the test has its own calibration store (ag_calstore.h),
# never the user's.
os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, "cache")


def path(name):
    return os.path.join(TMP, name)


def compare(*args, timeout=120):
    """parity compare --json ARGS: (status, document or {}, stderr)."""
    return pf.compare_json(PARITY, args, timeout)


def arms(doc, bench=0):
    bs = doc.get("benchmarks") or []
    return bs[bench]["arms"] if len(bs) > bench else []


def names(doc, bench=0):
    return [a["name"] for a in arms(doc, bench)]


def lines(name):
    try:
        with open(path(name)) as f:
            return f.read().split("\n")[:-1]
    except OSError:
        return []


P = shlex.quote(PROG)
FAST = ["-r", "2", "-w", "0"]

# --- each argument one command, run by /bin/sh -c --------------------------
a = "%s sleep 1000" % P
b = "%s sleep 2000 && true" % P
code, doc, err = compare(*FAST, a, b)
ok(code == 0 and names(doc) == [a, b],
   "two quoted arguments are two commands, named as typed",
   (code, err, names(doc)))
ok([x.get("shell") for x in arms(doc)] == [a, b] and
   all("command" not in x for x in arms(doc)) and
   [x["subject"] for x in arms(doc)] == [True, False],
   "each runs through the shell; the first is the subject", arms(doc))
ok(list(doc["benchmarks"][0]["verdict"]) == [b] if doc else False,
   "the verdict of the first against the second")

# The table shows the names as typed.
r = subprocess.run([PARITY, "compare"] + FAST + [a, b], capture_output=True,
                   text=True, timeout=120)
ok(r.returncode == 0 and re.search(r"^%s +2 " % re.escape(a), r.stdout,
                                   re.M) and
   "verdict: %s vs %s:" % (a, b) in r.stdout,
   "the table and the verdict line name the commands as typed", r.stdout)

# --- the argv form keeps working, and its names keep the quoting ----------
code, doc, err = compare(*FAST, "--", "sh", "-c", "%s print-args x" % P,
                         "--", PROG, "print-args", "it's")
ok(code == 0 and names(doc) == ["sh -c '%s print-args x'" % PROG,
                                "%s print-args 'it'\\''s'" % PROG],
   "-- CMD -- CMD: names quote what the shell would need quoted",
   (code, err, names(doc)))
ok([x.get("command") for x in arms(doc)] ==
   [["sh", "-c", "%s print-args x" % PROG], [PROG, "print-args", "it's"]],
   "-- CMD -- CMD: argvs, run without a shell", arms(doc))

# --- -N: split into words, no shell ----------------------------------------
log = path("split.log")
code, doc, err = compare(*FAST, "-N", "%s append %s 'a b'" % (P, log),
                         '%s append %s "c \\" d"' % (P, log))
ok(code == 0 and [x.get("command") for x in arms(doc)] ==
   [[PROG, "append", log, "a b"], [PROG, "append", log, 'c " d']],
   "-N: quotes group words, a backslash keeps a quote", (err, arms(doc)))
ok(sorted(lines("split.log")) == ["a b", "a b", 'c " d', 'c " d'],
   "-N: the programs really got those words (2 runs each)",
   lines("split.log"))
code, doc, err = compare(*FAST, "--shell=none", "%s sleep 10" % P,
                         "%s sleep 20" % P)
ok(code == 0 and arms(doc)[1].get("command") == [PROG, "sleep", "20"],
   "--shell=none is -N", err)
code, doc, err = compare(*FAST, "-S", "/bin/sh -e", "%s sleep 10" % P,
                         "%s sleep 20" % P)
ok(code == 0 and arms(doc)[0].get("command") ==
   ["/bin/sh", "-e", "-c", "%s sleep 10" % PROG],
   "--shell SHELL: SHELL's words, -c and the command", (err, arms(doc)))

# --- -n/--command-name ----------------------------------------------------
code, doc, err = compare(*FAST, "-n", "short", "--command-name", "long",
                         "%s sleep 10" % P, "%s sleep 20" % P)
ok(code == 0 and names(doc) == ["short", "long"],
   "-n names the commands in order", (err, names(doc)))
code, doc, err = compare(*FAST, "-n", "first", "%s sleep 10" % P,
                         "%s sleep 20" % P)
ok(code == 0 and names(doc) == ["first", "%s sleep 20" % PROG],
   "fewer names than commands: the rest keep their command lines",
   names(doc))

# --- hooks: setup and cleanup once per command, prepare and conclude
# around every run (warm-ups too) ------------------------------------------
hooks = path("hooks.log")
run_a = "%s append %s run-a" % (P, hooks)
run_b = "%s append %s run-b" % (P, hooks)
code, doc, err = compare(
    "-r", "2", "-w", "1",
    "--setup", "%s append %s setup-a" % (P, hooks),
    "--setup", "%s append %s setup-b" % (P, hooks),
    "--cleanup", "%s append %s cleanup" % (P, hooks),
    "-p", "%s append %s prepare-a" % (P, hooks),
    "-p", "%s append %s prepare-b" % (P, hooks),
    "-C", "%s append %s conclude" % (P, hooks), run_a, run_b)
got = lines("hooks.log")
ok(code == 0 and got[:2] == ["setup-a", "setup-b"] and
   got[-2:] == ["cleanup", "cleanup"],
   "--setup once per command before any run, --cleanup after the last",
   (err, got))
middle = got[2:-2]
triples = [middle[i:i + 3] for i in range(0, len(middle), 3)]
ok(len(triples) == 6 and
   all(t in (["prepare-a", "run-a", "conclude"],
             ["prepare-b", "run-b", "conclude"]) for t in triples) and
   sum(t[1] == "run-a" for t in triples) == 3,
   "--prepare (per command) and --conclude (once) around each of the 3 runs"
   " (1 warm-up, 2 measured) of each command", got)

# --- -L: each value a separate comparison ------------------------------------
code, doc, err = compare(*FAST, "-L", "n", "10,20\\,5", "-L", "k", "x,y",
                         "%s print-args {n} {k}" % P,
                         "%s print-args {k}" % P)
bs = doc.get("benchmarks", [])
ok(code == 0 and [x["name"] for x in bs] ==
   ["compare n=10 k=x", "compare n=20,5 k=x", "compare n=10 k=y",
    "compare n=20,5 k=y"],
   "-L twice: every combination, the first -L fastest; \\, is a comma",
   (err, [x.get("name") for x in bs]))
ok(bs and bs[1].get("parameters") == {"n": "20,5", "k": "x"} and
   names(doc, 1) == ["%s print-args 20,5 x" % PROG,
                     "%s print-args x" % PROG] and
   arms(doc, 1)[0]["shell"] == "%s print-args 20,5 x" % PROG,
   "{NAME} is replaced in the commands; the values are in \"parameters\"",
   bs[1] if bs else None)

# One command and values: one comparison, the values its arms.
code, doc, err = compare(*FAST, "-P", "d", "0.3", "0.7", "-D", "0.2",
                         "-n", "delay {d}", "%s print-args {d}" % P)
bs = doc.get("benchmarks", [])
ok(code == 0 and len(bs) == 1 and
   names(doc) == ["delay 0.3", "delay 0.5", "delay 0.7"] and
   arms(doc)[2]["shell"] == "%s print-args 0.7" % PROG and
   arms(doc)[0]["subject"],
   "-P with -D and one command: one comparison of the values; -n with "
   "{NAME}", (err, names(doc)))
code, doc, err = compare(*FAST, "-P", "t", "1", "3", "%s sleep {t}0" % P,
                         "%s sleep {t}00" % P)
bs = doc.get("benchmarks", [])
ok(code == 0 and [x.get("parameters") for x in bs] ==
   [{"t": "1"}, {"t": "2"}, {"t": "3"}] and
   names(doc, 2) == ["%s sleep 30" % PROG, "%s sleep 300" % PROG],
   "-P MIN MAX: integers, each a comparison of the two commands",
   (err, [x.get("name") for x in bs]))
code, doc, err = compare(*FAST, "-P", "t", "1", "2", "-n", "a{t}", "-n",
                         "b{t}", "-n", "c{t}", "-n", "d{t}",
                         "%s sleep {t}" % P, "%s sleep 1{t}" % P)
ok(code == 0 and [names(doc, i) for i in range(2)] ==
   [["a1", "b1"], ["c2", "d2"]],
   "-n once per command and value, in hyperfine's order", (err, doc))

# --- --reference: the baseline the other command is judged against -----------
ref = "%s sleep 1000" % P
new = "%s sleep 100" % P
code, doc, err = compare(*FAST, "--reference", ref, new)
ok(code == 0 and names(doc) == [ref, new] and
   [x["subject"] for x in arms(doc)] == [False, True] and
   list(doc["benchmarks"][0]["verdict"]) == [ref],
   "--reference CMD and one command: CMD first, the command the subject",
   (err, arms(doc)))
code, doc, err = compare(*FAST, "--reference", ref, new, ref)
ok(code == 0 and names(doc) == [new, ref] and
   [x["subject"] for x in arms(doc)] == [True, False],
   "--reference naming one of two commands picks it as the baseline",
   (err, arms(doc)))

# --- exports ------------------------------------------------------------------
ej, em, ec = path("out.json"), path("out.md"), path("out.csv")
code, doc, err = compare(*FAST, "-L", "n", "1,2", "--export-json", ej,
                         "--export-markdown", em, "--export-csv", ec,
                         "%s sleep 1{n}" % P, "%s sleep 2{n}" % P)
ok(code == 0 and os.path.exists(ej) and json.load(open(ej)) == doc,
   "--export-json: the results file, as --json prints it", err)
md = open(em).read() if os.path.exists(em) else ""
blocks = md.split("### ")[1:]
ok(len(blocks) == 2 and blocks[0].startswith("compare n=1\n\n") and
   blocks[1].startswith("compare n=2\n\n"),
   "--export-markdown: a heading per comparison", md)
rows = [ln for ln in md.splitlines() if ln.startswith("|")]
head = re.match(r"^\| Command \| Median \[(µs|ms|s)\] \| Min \[\1\] \| "
                r"Max \[\1\] \| IQR \[\1\] \| n \| Subject vs this \|$",
                rows[0] if rows else "")
ok(head and rows[1] == "|:---|---:|---:|---:|---:|---:|:---|" and
   len(rows) == 8,
   "--export-markdown: hyperfine's table shape, one unit per table", md)
cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows]
ok(cells[2][0] == "`%s sleep 11`" % PROG and cells[2][6] == "subject" and
   re.match(r"^(win|parity|loss) \d+\.\d{4} \(tol\. \d+\.\d{4}\)$",
            cells[3][6]) and all(re.match(r"^\d+\.\d+$", c)
                                 for c in cells[3][1:5]) and
   cells[3][5] == "2",
   "--export-markdown: commands as code, the subject's verdict per row",
   cells)
table = list(csv.reader(io.StringIO(open(ec).read()
                                    if os.path.exists(ec) else "")))
ok(table and table[0] ==
   ["command", "mean", "stddev", "median", "user", "system", "min", "max",
    "parameter_n", "benchmark", "subject", "n", "iqr", "outcome", "ratio",
    "tolerance"],
   "--export-csv: hyperfine's columns, then parameter_NAME, then Parity's",
   table[:1])
ok(len(table) == 5 and [r[0] for r in table[1:]] ==
   ["%s sleep 11" % PROG, "%s sleep 21" % PROG, "%s sleep 12" % PROG,
    "%s sleep 22" % PROG] and [r[8] for r in table[1:]] == ["1", "1", "2",
                                                           "2"],
   "--export-csv: a row per command and value", table)
s0 = doc["benchmarks"][0]["summary"]["%s sleep 11" % PROG] if doc else {}
ok(len(table) == 5 and
   abs(float(table[1][2 + 1]) * 1e6 - s0.get("median", -1)) < 0.01 and
   abs(float(table[1][1]) * 1e6 - s0.get("mean", -1)) < 0.01 and
   float(table[1][2]) >= 0 and table[1][10] == "true" and
   table[1][13] == "" and table[2][10] == "false" and
   table[2][13] in ("win", "parity", "loss") and float(table[2][14]) > 0,
   "--export-csv: seconds that match the results file; the verdict on the "
   "other's row", table[1:3])

# A failing command still exports what was measured, exit 4.
code, doc, err = compare(*FAST, "--export-csv", path("fail.csv"),
                         "%s sleep 10" % P, "%s exit 3" % P)
ok(code == 4 and os.path.exists(path("fail.csv")) and
   doc["benchmarks"][0]["status"] == "failed",
   "a failing command: exit 4, the CSV still written", (code, err))

# --- every command-line error, pinned ------------------------------------------
E = "parity compare: "
errors = [
    ([], "expected at least two commands: parity compare 'CMD_A' 'CMD_B' "
         "(or -- CMD_A... -- CMD_B...)"),
    (["a"], "expected at least two commands: parity compare 'CMD_A' "
            "'CMD_B' (or -- CMD_A... -- CMD_B...)"),
    (["", "b"], "command 1 is empty"),
    (["-N", "a | b", "c"], "command 1 \"a | b\": \"|\" needs a shell (drop "
                          "-N, or quote it)"),
    (["-N", "a", "echo $HOME"], "command 2 \"echo $HOME\": \"$\" needs a "
                               "shell (drop -N, or put it in single "
                               "quotes)"),
    (["-N", "a 'b", "c"], "command 1 \"a 'b\": no closing '"),
    (["-N", "a", "b\\"], "command 2 \"b\\\": a backslash at the end"),
    (["-N", "a", "  "], "command 2 \"  \": the command is empty"),
    (["-N", "a", "'' x"], "command 2 \"'' x\": the program name is empty"),
    (["-N", "-p", "x >y", "a", "b"],
     "--prepare \"x >y\": \">\" needs a shell (drop -N, or quote it)"),
    (["-S", "sh '", "a", "b"], "--shell \"sh '\": no closing '"),
    (["-S", "bash", "--", "a", "--", "b"],
     "--shell bash: the commands after \"--\" are argvs, run without a "
     "shell"),
    (["-r", "0", "a", "b"], "--runs 0: expected auto or an integer from 2 "
     "to 100000"),
    (["-w", "x", "a", "b"],
     "--warmup x: expected an integer from 0 to 10000"),
    (["-r"], "-r needs a value"),
    (["--prepare", "--", "a", "--", "b"], "--prepare needs a value"),
    (["-n", "a", "-n", "b", "-n", "c", "x", "y"],
     "-n given 3 times for 2 commands"),
    (["-L", "v", "1,2", "-n", "a", "-n", "b", "-n", "c", "{v}", "y"],
     "-n given 3 times: once, once per command (2) or once per command and "
     "value (4)"),
    (["--setup", "a", "--setup", "b", "--setup", "c", "x", "y"],
     "--setup given 3 times: once for all commands, or once per command (2)"),
    (["--reference", "r", "--conclude", "a", "--conclude", "b",
      "--conclude", "c", "x"],
     "--conclude given 3 times: once for all commands, or once per command "
     "(2, the --reference first)"),
    (["--cleanup", "c"] * 17 + ["a", "b"],
     "--cleanup given more than 16 times"),
    (["--reference", "r", "a", "b"],
     "--reference: parity compare judges one command against the reference,"
     " found 2 (drop --reference to judge the first command against each "
     "other one)"),
    (["-L", "x", "1,2", "a", "b"], "-L x: no command, name or hook holds {x}"),
    (["-L", "x", "1,1", "{x}", "b"], "-L x: the value \"1\" is given twice"),
    (["-L", "x y", "1,2", "a", "b"],
     "-L \"x y\": a parameter name is 1 to 100 letters, digits, _ - or ."),
    (["-L", "x", "1", "-P", "x", "1", "2", "{x}", "b"],
     "-P x: the parameter x is given twice"),
    (["-L", "x"], "-L needs NAME VALUES"),
    (["-P", "x", "1"], "-P needs NAME MIN MAX"),
    (["-P", "x", "1", "2", "-P", "y", "1", "2", "{x}{y}", "b"],
     "-P given twice (add values with -L)"),
    (["-P", "x", "2", "1", "{x}", "b"],
     "-P x 2 1: the range is empty (1 is below 2)"),
    (["-P", "x", "0.1", "0.5", "{x}", "b"],
     "-P x 0.1 0.5: decimal bounds need a step (-D)"),
    (["-P", "x", "1", "5", "-D", "-1", "{x}", "b"],
     "-P x 1 5 -D -1: the step must be above 0"),
    (["-P", "x", "1e3", "5", "{x}", "b"],
     "-P x 1e3 5: \"1e3\" is not a number (digits, an optional sign and "
     "point, at most 9 decimals)"),
    (["-P", "x", "1", "300", "{x}", "b"], "-P x 1 300: 300 values, at most 256"),
    (["-D", "2", "a", "b"], "-D 2: a step for -P, which is not given"),
    (["-L", "x", ",".join(map(str, range(17))), "{x}"],
     "-L/-P: more than 16 values, the arms of one comparison (one command)"),
    (["-L", "x", ",".join(map(str, range(20))), "-L", "y",
      ",".join(map(str, range(20))), "{x}{y}", "b"],
     "-L/-P: more than 256 combinations of values, one comparison each"),
    (["-L", "x", "1", "{x}"], "one command and one value: nothing to compare "
                             "(give two values, or two commands)"),
    (["-L", "x", "a" * 100000 + ",b", "{x}" * 11, "b"],
     "command 1: longer than 1048576 bytes once the parameters are put in"),
    (["--export-csv", TMP, "a", "b"], "--export-csv %s: is a directory" % TMP),
    (["--export-markdown", "/nonexistent-dir/x.md", "a", "b"],
     "--export-markdown /nonexistent-dir/x.md: cannot write in "
     "/nonexistent-dir: No such file or directory"),
    (["--frob", "a", "b"], "unknown option \"--frob\" (parity compare --help)"),
    (["-M", "3", "a", "b"], "--max-runs 3: a cap for --runs auto, which is "
     "not given"),
    (["--runs", "10", "--max-runs", "30", "a", "b"], "--max-runs 30: a cap "
     "for --runs auto, which is not given"),
    (["--runs", "auto", "--max-runs", "1", "a", "b"], "--max-runs 1: "
     "expected an integer from 2 to 100000"),
    (["--runs", "auto", "-M", "100001", "a", "b"], "--max-runs 100001: "
     "expected an integer from 2 to 100000"),
    (["--runs", "Auto", "a", "b"], "--runs Auto: expected auto or an integer "
     "from 2 to 100000"),
    (["-x", "a", "b"], "unknown option \"-x\" (parity compare --help)"),
]
hyperfine_only = [
    (["-m", "3"], "-m/--min-runs", "it runs exactly --runs rounds, or with "
     "--runs auto at least 10"),
    (["--min-runs", "3"], "-m/--min-runs", "it runs exactly --runs rounds, "
     "or with --runs auto at least 10"),
    (["-i"], "-i/--ignore-failure",
     "a command that fails stops its comparison (exit 4)"),
    (["--ignore-failure"], "-i/--ignore-failure",
     "a command that fails stops its comparison (exit 4)"),
    (["--show-output"], "--show-output", "the commands' output is discarded"),
    (["--output", "pipe"], "--output", "the commands' output is discarded"),
    (["--input", "f"], "--input", "the commands read /dev/null"),
    (["--style", "basic"], "--style", "the table has one format"),
    (["--sort", "command"], "--sort",
     "the table lists the commands in the order given"),
    (["-u", "second"], "-u/--time-unit", "each time is shown in its own unit"),
    (["--time-unit", "second"], "-u/--time-unit",
     "each time is shown in its own unit"),
    (["--export-asciidoc", "f"], "--export-asciidoc",
     "use --export-markdown, --export-csv or --export-json"),
    (["--export-orgmode", "f"], "--export-orgmode",
     "use --export-markdown, --export-csv or --export-json"),
]
for opt, name, why in hyperfine_only:
    errors.append((opt + ["a", "b"], "%s is a hyperfine option that parity "
                   "compare does not have: %s" % (name, why)))
for args, msg in errors:
    r = subprocess.run([PARITY, "compare"] + args, capture_output=True,
                       text=True, timeout=60)
    shown = " ".join(a if len(a) < 40 else a[:20] + "..." for a in args)
    ok(r.returncode == 2 and r.stderr == E + msg + "\n" and r.stdout == "",
       "error: %s" % shown.replace(TMP, "$TMP"), (r.returncode, r.stderr))

r = subprocess.run([PARITY, "compare", "--help"], capture_output=True,
                   text=True, timeout=60)
flags = ("--runs", "--warmup", "--command-name", "--shell", "--prepare",
         "--conclude", "--setup", "--cleanup", "--reference",
         "--parameter-list", "--parameter-scan", "--parameter-step-size",
         "--export-json", "--export-markdown", "--export-csv", "-N")
ok(r.returncode == 0 and all(f in r.stdout for f in flags),
   "--help names every flag (the completions read it)",
   [f for f in flags if f not in r.stdout])

pf.finish()
