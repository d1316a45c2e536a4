#!/usr/bin/env python3
"""gate_bench.py -- the CI gate across jobs against the gate in one job
(docs/performance.md "Gate", docs/ci.md "Which mode").

    tests/bench/gate_bench.py [--build DIR] [--tries N]
                              [--only sleep10|loop10|sleep3|busy10]

The fleet of tests/jobs/test_against.py: parity-collector with its
private PostgreSQL, two parity-agent daemons (alpha, beta) on this
machine, 127.0.0.1 only. Suite "gate" says `revision: commit`; each
benchmark's subject is 10 % or 3 % slower from commit c37 on:

  sleep10  a 45 ms sleep (parity-testprog sleep), 10 % longer; the
           collector's default --parity 0.04
  loop10   45 ms of CPU work (parity-testprog loop), 10 % more
           iterations; --parity 0.04
  sleep3   the 45 ms sleep, 3 % longer; --parity 0.01, a tolerance below
           the step (at 0.04 the rule calls 3 % parity by design)
  busy10   sleep10 on a machine that changed between the baseline and the
           gate: two processes spinning (one a core) run through every
           gate job and no baseline job, as a build or another tenant
           starting on the benchmark host between two jobs would

Each step is gated N times (default 5) in two modes, alternating, and an
A/A pull request (c01, the same code as c00) as many times:

  across   the peer: a baseline job `--var commit=c00 --tag branch=main`,
           then the gate `--var commit=c50 --baseline branch=main
           --fail-on loss` (and c01 for the A/A gate)
  one job  `--var commit=c50 --against commit=c00 --fail-on loss` (and
           c01 against c00)

For each: how many gates failed (a detected step; for A/A, a false
alarm), the jobs per gate, the median wall time of a gate, and the
median tolerance and noise term of the verdicts it judged (the rule's
spread term, docs/verdict.md). Exit 0: a benchmark reports, it does not
judge.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

BASE_US = 45000
# 45 ms of parity-testprog loop on the machine these figures came from
# (0.45 ns an iteration); the step is in iterations, not time.
BASE_LOOPS = 100000000
CASES = {
    "sleep10": ("sleep", 1.10, "0.04"),
    "loop10": ("loop", 1.10, "0.04"),
    "sleep3": ("sleep", 1.03, "0.01"),
    "busy10": ("sleep", 1.10, "0.04"),
}
def gate_cases(body):
    """(outcome, tolerance, noise) of each case the gate judged: the
    baseline answer's, or the --against comparisons of the verdicts."""
    if "baseline" in body and isinstance(body["baseline"], dict):
        cmps = body["baseline"].get("comparisons", [])
    else:
        cmps = [c for c in body.get("verdicts", {}).get("comparisons", [])
                if isinstance(c.get("against"), dict)]
    out = []
    for c in cmps:
        for h in c.get("hosts", []):
            v = h.get("verdict")
            if isinstance(v, dict):
                out.append((v.get("outcome"), v.get("tolerance"),
                            v.get("noise")))
    return out


def one_gate(w, tj, args, busy):
    # busy10's load: a spinning process per core through the gate job.
    prog, = tj.pf.built("tests/helpers/parity-testprog")
    hogs = [tj.subprocess.Popen([prog, "spin", "3600000000"])
            for _ in range(os.cpu_count() if busy else 0)]
    t0 = time.time()
    try:
        r = w.parity("run", "gate", "--wait", "--json", "--fail-on", "loss",
                     *args, timeout=600)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    wall = time.time() - t0
    try:
        body = json.loads(r.stdout)
    except ValueError:
        body = {}
        sys.stderr.write(r.stderr[-1000:])
    return r.returncode == 1 and "gate failed" in r.stderr, wall, \
        gate_cases(body)


def scenario(tj, ta, name, tries):
    op, step, parity = CASES[name]
    base = BASE_US if op == "sleep" else BASE_LOOPS
    prog, = tj.pf.built("tests/helpers/parity-testprog")

    class World(tj.World):
        def start_collector(self):
            self.collector = tj.subprocess.Popen(
                self.collector_cmd(self.endpoint, tj.HEARTBEAT_MS,
                                   "--parity", parity),
                stdout=self.log, stderr=self.log)
            self.wait_tcp(self.collector, self.port)

    w = World()
    stats = {m: {"step": [], "aa": [], "wall": [], "tol": [], "noise": []}
             for m in ("across", "one job")}
    try:
        w.write_suites({"gate.yaml": ta.SUITE % {
            "name": "gate", "bench": "step", "subject": "tool",
            "other": "release", "prog": prog, "op": op, "base": base,
            "slow": round(base * step)}})
        if not w.start_fleet(("alpha", "beta")):
            print("%s: the agents did not come online" % name)
            return
        for i in range(tries):
            for mode in ("across", "one job"):
                s = stats[mode]
                for head, key in (("c50", "step"), ("c01", "aa")):
                    if mode == "across":
                        w.parity("run", "gate", "--wait", "--var",
                                 "commit=c00", "--tag", "branch=main",
                                 timeout=600)
                        args = ("--var", "commit=" + head, "--baseline",
                                "branch=main")
                    else:
                        args = ("--var", "commit=" + head, "--against",
                                "commit=c00")
                    failed, wall, cases = one_gate(w, tj, args,
                                                   name == "busy10")
                    s[key].append(failed)
                    s["wall"].append(wall)
                    s["tol"] += [c[1] for c in cases if c[1] is not None]
                    s["noise"] += [c[2] for c in cases if c[2] is not None]
        for mode in ("across", "one job"):
            s = stats[mode]
            print("%-7s %-7s --parity %s: step gates failed %d of %d, A/A "
                  "gates failed %d of %d, %s a gate, median wall %.1f s, "
                  "tolerance %.1f %%, noise %.1f %% (median of %d verdicts)"
                  % (name, mode, parity, sum(s["step"]), len(s["step"]),
                     sum(s["aa"]), len(s["aa"]),
                     "2 jobs" if mode == "across" else "1 job",
                     statistics.median(s["wall"]),
                     100 * statistics.median(s["tol"] or [0]),
                     100 * statistics.median(s["noise"] or [0]),
                     len(s["tol"])))
        a, o = stats["across"], stats["one job"]
        print("%-7s detected: one job %d/%d against across jobs %d/%d; "
              "false alarms: %d/%d against %d/%d; noise ratio one job / "
              "across %.2f" % (name, sum(o["step"]), len(o["step"]),
                               sum(a["step"]), len(a["step"]), sum(o["aa"]),
                               len(o["aa"]), sum(a["aa"]), len(a["aa"]),
                               statistics.median(o["noise"] or [0]) /
                               max(statistics.median(a["noise"] or [1]),
                                   1e-9)))
        sys.stdout.flush()
    finally:
        w.close(keep=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--only", choices=sorted(CASES))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    os.environ["PARITY_BUILD_DIR"] = build
    sys.argv = [sys.argv[0], build]
    sys.path.insert(0, os.path.join(ROOT, "tests", "jobs"))
    import test_jobs as tj
    import test_against as ta   # its suite, with this benchmark's numbers
    for name in CASES:
        if a.only in (None, name):
            scenario(tj, ta, name, a.tries)


if __name__ == "__main__":
    main()
