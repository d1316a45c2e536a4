#!/usr/bin/env python3
"""adaptive.py -- a floor that holds still and `runs: auto`,
measured with the built `parity compare` on this machine.

    tests/bench/adaptive.py BUILD_DIR [--trials 200] [--per 20]
                            [--trials-ab N] [--trials-105 N] [--repeats 30]
                            [--floor-invocations 20]
                            [--modes 10,30,auto] [--cases floor,aa1,...]

1. floor: 20 invocations with --fresh-floor (before: each invocation's
   own q90 - q10) and 20 with the calibration store (after: pooled with
   the host's last 1,000 runs, the store filled first); min, median, max
   and the largest distance from the median in %. Target: within +-15 %.
2. A/A: the same 1 ms and 10 ms CPU work (parity-testprog spin) in both
   arms; every win or loss is a false verdict. Target <= 1 %.
3. A/B: 10 ms against 11 ms of the same work; the share found (loss).
   Target >= 95 %.
4. Reproducibility: the same A/B comparison as 30 separate invocations;
   the share of the most common outcome. Target >= 95 %.
5. 10 ms against 10.5 ms: the share found, and what limits it: the
   median tolerance's largest term (parity 0.04, the arms' noise, or
   floor / median).

Each case runs with fixed 10 runs, fixed 30 and --runs auto. Trials are
cheap: one invocation holds --per comparisons (-P t 1 PER, one benchmark
each, one verdict each) sharing its calibration, so 200 trials are 10
invocations a mode. Every table row reports the load average (1 min,
before and after), the median floor, the arms' median noise and the
median runs taken.

Not a test: the figures depend on the machine and its load;
docs/performance.md records them with this command.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--trials", type=int, default=200)
ap.add_argument("--trials-ab", type=int, default=0,
                help="trials of 10 vs 11 ms (default: --trials)")
ap.add_argument("--trials-105", type=int, default=0,
                help="trials of 10 vs 10.5 ms (default: --trials)")
ap.add_argument("--per", type=int, default=20)
ap.add_argument("--repeats", type=int, default=30)
ap.add_argument("--floor-invocations", type=int, default=20)
ap.add_argument("--modes", default="10,30,auto")
ap.add_argument("--cases", default="floor,aa1,aa10,ab10,repro,ab105")
a = ap.parse_args()

PARITY = os.path.join(a.build, "collector/client/parity")
PROG = shlex.quote(os.path.join(a.build, "tests/helpers/parity-testprog"))
TMP = tempfile.mkdtemp(prefix="parity-adaptive-bench-")
os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, "cache")
MODES = a.modes.split(",")
CASES = a.cases.split(",")


def load():
    return os.getloadavg()[0]


def compare(args, timeout=3600):
    r = subprocess.run([PARITY, "compare", "--json", "-w", "1"] + args,
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit("parity compare %s: exit %d: %s" % (" ".join(args),
                                                       r.returncode,
                                                       r.stderr))
    return json.loads(r.stdout)


def mode_args(mode):
    return ["--runs", "auto"] if mode == "auto" else ["--runs", mode]


def trials(us_a, us_b, mode, n, per):
    """n comparisons of spin us_a against spin us_b, per to an
    invocation: a list of (verdict, runs, floor)."""
    out = []
    while len(out) < n:
        k = min(per, n - len(out))
        cmd_a = "%s spin %d # {t}" % (PROG, us_a)
        cmd_b = "%s spin %d # {t}" % (PROG, us_b)
        args = mode_args(mode) + (["-P", "t", "1", str(k)] if k > 1
                                  else []) + [cmd_a.replace(" # {t}", "")
                                              if k == 1 else cmd_a,
                                              cmd_b.replace(" # {t}", "")
                                              if k == 1 else cmd_b]
        doc = compare(args)
        fl = doc["floor"]["floor_us"]
        for b in doc["benchmarks"]:
            for v in b["verdict"].values():
                out.append((v, b["runs"], fl))
    return out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def row(name, mode, res, l0, l1, want):
    outs = [v["outcome"] for v, _, _ in res]
    n = len(outs)
    wins, par, loss = outs.count("win"), outs.count("parity"), \
        outs.count("loss")
    rate = {"false": (wins + loss) / n, "found": loss / n,
            "modal": max(wins, par, loss) / n}[want]
    noise = med([v["noise"] for v, _, _ in res])
    floor = med([f for _, _, f in res])
    runs = med([r for _, r, _ in res])
    tol = med([v["tolerance"] for v, _, _ in res])
    flr = med([v["floor_us"] / min(v["subject"]["median"],
                                   v["other"]["median"]) for v, _, _ in res])
    print("| %s | %s | %d | %d / %d / %d | **%.1f %%** | %g | %.0f µs | "
          "%.2f %% | %.2f %% | %.2f %% | %.2f → %.2f |"
          % (name, mode, n, wins, par, loss, 100 * rate, runs, floor,
             100 * noise, 100 * flr, 100 * tol, l0, l1))
    sys.stdout.flush()


HEAD = ("| case | runs | trials | win / parity / loss | %s | median runs | "
        "median floor | median noise | floor/median | median tolerance | "
        "load avg |\n|---|---|---|---|---|---|---|---|---|---|---|")


def floor_case():
    print("\n### Floor across %d invocations\n" % a.floor_invocations)
    # Fill the store first (10 invocations of 100+ runs each).
    for _ in range(10):
        compare(["-r", "2", "-w", "0", "--", "/bin/true", "--",
                 "/bin/true"])
    print("| floor | invocations | min | median | max | largest distance "
          "from the median | load avg |\n|---|---|---|---|---|---|---|")
    pooled, noisy = [], 0
    for label, extra in (("fresh (before)", ["--fresh-floor"]),
                         ("store (after)", [])):
        l0 = load()
        fl = []
        for _ in range(a.floor_invocations):
            doc = compare(["-r", "2", "-w", "0"] + extra +
                          ["--", "/bin/true", "--", "/bin/true"])
            fl.append(doc["floor"]["floor_us"])
            if not extra and doc["floor"]["why"] == "noisy":
                noisy += 1
            elif not extra:
                pooled.append(doc["floor"]["floor_us"])
        m = med(fl)
        dev = max(abs(x - m) / m for x in fl)
        print("| %s | %d | %.0f µs | %.0f µs | %.0f µs | **%.1f %%** | "
              "%.2f → %.2f |" % (label, len(fl), min(fl), m, max(fl),
                                 100 * dev, l0, load()))
        sys.stdout.flush()
    # A much noisier invocation uses its own floor on purpose
    # (docs/verdict.md); the pooled statistic itself is the rest.
    if pooled:
        m = med(pooled)
        print("| store, pooled ones only (%d much noisier: their own) | %d | "
              "%.0f µs | %.0f µs | %.0f µs | **%.1f %%** | |"
              % (noisy, len(pooled), min(pooled), m, max(pooled),
                 100 * max(abs(x - m) / m for x in pooled)))


print("# tests/bench/adaptive.py %s (%s, %d CPUs)" % (
    " ".join(sys.argv[2:]), time.strftime("%Y-%m-%d %H:%M UTC",
                                          time.gmtime()), os.cpu_count()))
if "floor" in CASES:
    floor_case()
cases = [("aa1", "A/A 1 ms", 1000, 1000, "false", a.trials),
         ("aa10", "A/A 10 ms", 10000, 10000, "false", a.trials),
         ("ab10", "A/B 10 vs 11 ms", 11000, 10000, "found",
          a.trials_ab or a.trials),
         ("ab105", "A/B 10 vs 10.5 ms", 10500, 10000, "found",
          a.trials_105 or a.trials)]
for key, name, ua, ub, want, n in cases:
    if key not in CASES:
        continue
    print("\n### %s (%d trials a mode, %d to an invocation)\n"
          % (name, n, a.per))
    print(HEAD % {"false": "false verdicts", "found": "found"}[want])
    for mode in MODES:
        l0 = load()
        res = trials(ua, ub, mode, n, a.per)
        row(name, mode, res, l0, load(), want)
    if key == "ab10" and "repro" in CASES:
        print("\n### Reproducibility: A/B 10 vs 11 ms, %d invocations of "
              "one comparison\n" % a.repeats)
        print(HEAD % "most common outcome")
        for mode in MODES:
            l0 = load()
            res = trials(11000, 10000, mode, a.repeats, 1)
            row("repeat 10 vs 11 ms", mode, res, l0, load(), "modal")
subprocess.run(["rm", "-rf", TMP])
