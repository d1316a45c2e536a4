#!/usr/bin/env python3
"""overhead_spawn.py -- the harness's measurement overhead.

In one interleaved session (blocks rotate the tools' order), time /bin/true
with
  parity   `parity compare --runs R -- /bin/true -- /bin/true` (both arms)
  hyperfine `hyperfine -N --runs R /bin/true` (named peer)
  bare     tests/bench/overhead-bare: posix_spawn + wait4, nothing else
and print min and median per tool and the ratios parity/hyperfine (target
<= 1.0) and parity/bare (limit 1.03), pooled and paired per block
(one run of each tool, adjacent in time, so drift cancels). Then run a 1 ms CPU workload through
`parity-agent run` and print the agent's own CPU (harness_cpu of the
results file) as a share of the measured time (limit 5 %).

    tests/bench/overhead_spawn.py BUILD_DIR [--blocks 5] [--runs 200]

Not a test: figures vary with the machine; docs/performance.md records
them with this command.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--blocks", type=int, default=30)
ap.add_argument("--runs", type=int, default=100)
ap.add_argument("--workload-runs", type=int, default=300)
a = ap.parse_args()

PARITY = os.path.join(a.build, "collector/client/parity")
AGENT = os.path.join(a.build, "agent/parity-agent")
BARE = os.path.join(a.build, "tests/bench/overhead-bare")
PROG = os.path.join(a.build, "tests/helpers/parity-testprog")
TRUE = "/bin/true"
tmp = tempfile.mkdtemp(prefix="parity-overhead-")


def parity_block():
    # Two arms of /bin/true: runs/2 rounds give as many samples as the
    # peers take, so the blocks are about as long.
    r = subprocess.run([PARITY, "compare", "--runs", str(max(a.runs // 2, 2)),
                        "--warmup", "5", "--json", "--", TRUE, "--", TRUE],
                       capture_output=True, text=True, check=True)
    doc = json.loads(r.stdout)
    return [s["wall_us"] for s in doc["benchmarks"][0]["samples"]
            if s["kind"] == "measured"]


def hyperfine_block():
    out = os.path.join(tmp, "hf.json")
    subprocess.run(["hyperfine", "-N", "--runs", str(a.runs), "--warmup", "5",
                    "--export-json", out, "--style", "none", TRUE],
                   capture_output=True, check=True)
    return [t * 1e6 for t in json.load(open(out))["results"][0]["times"]]


def bare_block():
    r = subprocess.run([BARE, str(a.runs), TRUE], capture_output=True,
                       text=True, check=True)
    return [float(x) for x in r.stdout.split()]


tools = [("parity", parity_block), ("hyperfine", hyperfine_block),
         ("bare", bare_block)]
samples = {name: [] for name, _ in tools}
# Per block (one run of each tool, adjacent in time) the ratio of parity's
# min and median to each peer's: the machine's drift between blocks
# cancels out of these paired ratios.
paired = {"hyperfine": ([], []), "bare": ([], [])}
for blk in range(a.blocks):
    got = {}
    for i in range(len(tools)):
        name, fn = tools[(blk + i) % len(tools)]
        got[name] = fn()
        samples[name] += got[name]
    for peer in paired:
        paired[peer][0].append(min(got["parity"]) / min(got[peer]))
        paired[peer][1].append(statistics.median(got["parity"]) /
                               statistics.median(got[peer]))

print("/bin/true, %d blocks x %d runs, tools rotated per block" %
      (a.blocks, a.runs))
print("%-10s %6s %10s %10s" % ("tool", "n", "min_us", "median_us"))
stat = {}
for name in samples:
    x = samples[name]
    stat[name] = (min(x), statistics.median(x))
    print("%-10s %6d %10.1f %10.1f" % (name, len(x), stat[name][0],
                                        stat[name][1]))
for peer, limit in (("hyperfine", 1.0), ("bare", 1.03)):
    rmin = stat["parity"][0] / stat[peer][0]
    rmed = stat["parity"][1] / stat[peer][1]
    pmin = statistics.median(paired[peer][0])
    pmed = statistics.median(paired[peer][1])
    print("parity/%-9s pooled min %.3f median %.3f; per block (median of "
          "%d) min %.3f median %.3f  (limit %.2f: %s)" %
          (peer, rmin, rmed, a.blocks, pmin, pmed, limit,
           "met" if pmin <= limit and pmed <= limit else "NOT met"))

suite = os.path.join(tmp, "cpu.yaml")
with open(suite, "w") as f:
    f.write("""suite: overhead
benchmarks:
  - name: spin1ms
    runs: %d
    warmup: 5
    arms:
      - {name: a, command: [%s, spin, "1000"]}
      - {name: b, command: [%s, spin, "1000"]}
""" % (a.workload_runs, json.dumps(PROG), json.dumps(PROG)))
r = subprocess.run([AGENT, "run", suite, "--json"], capture_output=True,
                   text=True, check=True)
res = json.loads(r.stdout)
hc = res["harness_cpu"]
ho = res["benchmarks"][0]["harness_overhead"]
print("1 ms workload, %d rounds x 2 arms: agent's whole CPU %.0f us user + "
      "%.0f us sys over %.0f us of runs = %.2f %% (includes the clone inside "
      "each window)" %
      (a.workload_runs, hc["user_us"], hc["sys_us"], hc["runs_wall_us"],
       100 * hc["share"]))
windows = len(res["benchmarks"][0]["samples"])
print("  of which between timed windows (spawn setup, reaping, /proc read, "
      "recording): %.0f us = %.2f %% of the runs' time (limit 5 %%: %s); "
      "%.1f us per run, %.1f %% of the 1 ms workload itself" %
      (ho["between_runs_cpu_us"], 100 * ho["share"],
       "met" if ho["share"] < 0.05 else "NOT met",
       ho["between_runs_cpu_us"] / windows,
       100 * ho["between_runs_cpu_us"] / windows / 1000))
