#!/usr/bin/env python3
"""aa_metrics.py -- false verdicts of each metric in A/A trials
(docs/performance.md "Verdict", docs/verdict.md "The A/A self-test").

    tests/bench/aa_metrics.py [--build DIR] [--trials N]

The fleet of tests/jobs: parity-collector with its private PostgreSQL,
two parity-agent daemons (alpha, beta) on this machine, 127.0.0.1 only,
the collector's default --parity 0.04. `parity selftest --trials N
--wait` (default 60) judges each A/A pair on wall time, CPU time and
peak RSS; this prints each host's false verdicts per metric beside wall
time's, the peer in the same run (the rule was built for it). Exit 0:
a benchmark reports, it does not judge.
"""
import argparse
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--trials", type=int, default=60)
    a = ap.parse_args()
    os.environ["PARITY_BUILD_DIR"] = os.path.abspath(a.build)
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.join(ROOT, "tests", "jobs"))
    sys.argv = [sys.argv[0], os.path.abspath(a.build)]
    import test_jobs as tj
    w = tj.World()
    try:
        if not w.start_fleet(("alpha", "beta")):
            print("aa_metrics: the fleet did not come online")
            return 1
        r = w.parity("selftest", "--trials", str(a.trials), "--wait",
                     "--json", timeout=3600)
        doc = json.loads(r.stdout) if r.stdout.startswith("{") else {}
        print("host   metric    false verdicts / trials")
        for h in doc.get("hosts", []):
            ms = (h.get("selftest") or {}).get("metrics", {})
            for m in ("wall", "cpu", "peak_rss"):
                x = ms.get(m, {})
                print("%-6s %-9s %d / %d" % (h["host"], m,
                                             x.get("false_verdicts", -1),
                                             x.get("trials", 0)))
        hosts = w.pjson("hosts", "--json") or {}
        for h in hosts.get("hosts", []):
            f = h.get("metric_floors", {})
            print("%s floors: wall %.1f us, cpu %.1f us (%s), peak_rss %.0f "
                  "KiB" % (h["name"], h.get("floor_us", 0),
                           f.get("cpu", {}).get("floor", 0),
                           f.get("cpu", {}).get("source"),
                           f.get("peak_rss", {}).get("floor", 0)))
        return 0
    finally:
        w.close(keep=False)


if __name__ == "__main__":
    sys.exit(main())
