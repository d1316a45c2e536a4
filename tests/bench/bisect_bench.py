#!/usr/bin/env python3
"""bisect_bench.py -- `parity bisect` across three agents on this machine
(docs/performance.md "Bisect").

    tests/bench/bisect_bench.py [--build DIR] [--only 10|3] [--compare DIR]

The fleet of tests/history/test_bisect.py: parity-collector with its
private PostgreSQL, three parity-agent daemons on 127.0.0.1, 64 commits
whose tool sleeps 200 ms, and longer from one commit on:

  10 %   a 10 % step at c37, the collector's default --parity 0.04,
         --runs 10
  3 %    a 3 % step at c21, --parity 0.01 (a tolerance well below the step),
         --runs 10: the undecided commits are measured again with more
         runs

For each: `parity bisect start ... --wait`, then what it found, its
narrowing rounds and retries, the jobs and runs it made, and its wall
time; against the peer, a linear scan that measures every commit of the
range once (63 jobs after the good end), the ratio of jobs. With
--compare DIR, each scenario runs on that build too, right after this
one's (a build whose bisect measures each commit in a job of its own is
the peer of one that interleaves a step's commits in one job). Exit 0
(a benchmark reports; it does not judge).
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def scenario(tb, name, step, at, parity):
    w = tb.World(step=step, at=at, parity=parity)
    try:
        tb.start_fleet(w)
        t0 = time.time()
        r = subprocess.run(
            [tb.tj.PARITY, "bisect", "start", "--suite", "build", "--bench",
             "tool", "--good", "c00", "--bad", "c63", "--commits",
             w.commits, "--hosts", "alpha,beta,gamma", "--wait"],
            capture_output=True, text=True, env=w.client_env(), timeout=3600)
        wall = time.time() - t0
        b = w.status(1)
        res = b.get("result") or {}
        steps = b.get("steps", [])
        found = ",".join(c["commit"] for c in res.get("culprits", [])) or \
            "-"
        # A job measures each point of its step (a row each) when it
        # interleaves them; count jobs, and each job's runs once.
        jobs = {s["job"]: s["runs"] for s in steps}
        runs = sum(jobs.values())
        print("%-5s step at c%02d: found %s (%s), %s rounds (%s retries), "
              "%d jobs (%d steps), %d runs per arm per host, %.0f s; a "
              "linear scan: 63 jobs, ratio %.3f" % (
                  name, at, found, b.get("state"), res.get("rounds"),
                  res.get("retries"), len(jobs), len(steps), runs, wall,
                  len(jobs) / 63.0))
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-2000:])
    finally:
        w.close(keep=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--only", choices=("10", "3"))
    ap.add_argument("--compare")
    a = ap.parse_args()
    if a.compare:
        # Each scenario on both builds, one after the other: a process
        # each, since the fixtures read their build when imported.
        for only in ([a.only] if a.only else ["10", "3"]):
            for build in (a.build, a.compare):
                print("build %s:" % build)
                sys.stdout.flush()
                subprocess.run([sys.executable, os.path.abspath(__file__),
                                "--build", build, "--only", only])
        return
    # test_bisect reads its build dir from argv[2]; it is imported here.
    sys.argv = [sys.argv[0], "bench", os.path.abspath(a.build)]
    sys.path.insert(0, os.path.join(ROOT, "tests", "history"))
    import test_bisect as tb
    if a.only in (None, "10"):
        scenario(tb, "10 %", 1.10, 37, None)
    if a.only in (None, "3"):
        scenario(tb, "3 %", 1.03, 21, "0.01")


if __name__ == "__main__":
    main()
