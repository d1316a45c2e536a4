#!/usr/bin/env python3
"""test_bisect.py bisect BUILD_DIR -- `parity bisect` across the fleet (TAP).

Real processes, as in test_jobs.py: parity-collector with its private
PostgreSQL, three parity-agent daemons (alpha, beta, gamma) on 127.0.0.1,
and the `parity` client. Their suite `build` has a benchmark `tool` whose
subject runs builds/${commit}/tool, one script per commit of 64 (c00 to
c63) that sleeps 200 ms, or 220 ms from c37 on (a 10 % step at one
commit), against /bin/true.

  find     `parity bisect start ... --wait` names c37 with a loss on each
           host, in at most 6 narrowing rounds after the two ends; each
           step is a job tagged commit=SHA and bisect=ID; meanwhile the
           collector is restarted (the bisect carries on from the
           database) and an agent killed during its run of a step (the
           step is run again on that host alone); the change-point event
           that fleet-feed made between c36 and c37 links the bisect in
           `parity regressions`; status, the list, and every error
  queue    two bisects of one suite on one host: the second waits, queued,
           until the first ends; cancel stops a bisect and its jobs; a
           range without a step fails with its reason
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True

import test_jobs as tj  # noqa: E402
from parity_fixtures import ok, diag  # noqa: E402

HOSTS = ("alpha", "beta", "gamma")
COMMITS = ["c%02d" % i for i in range(64)]
STEP = 37


class World(tj.World):
    def __init__(self):
        super().__init__()
        self.builds = os.path.join(self.root, "builds")
        for i, c in enumerate(COMMITS):
            d = os.path.join(self.builds, c)
            os.makedirs(d)
            with open(os.path.join(d, "tool"), "w") as f:
                f.write("#!/bin/sh\nexec sleep %s\n" %
                        ("0.22" if i >= STEP else "0.2"))
            os.chmod(os.path.join(d, "tool"), 0o755)
        with open(os.path.join(self.suites, "build.yaml"), "w") as f:
            f.write("""suite: build
variables:
  commit: none
defaults:
  runs: 10
  warmup: 1
benchmarks:
  - name: tool
    arms:
      - name: tool
        subject: true
        shell: 'exec %s/${commit}/tool'
      - name: base
        command: [/bin/true]
""" % self.builds)
        self.commits = os.path.join(self.root, "commits.txt")
        with open(self.commits, "w") as f:
            # what git rev-list --reverse c00..c63 prints: c00 left out
            f.write("".join(c + "\n" for c in COMMITS[1:]))

    def start_collector(self):
        # A flat tolerance of 5 %: on a 2-core machine that runs other
        # tests meanwhile, a 200 ms sleep measures up to 2 % to 3 % longer
        # from one job to the next; the step is 10 %.
        self.collector = subprocess.Popen(
            self.collector_cmd(self.endpoint, tj.HEARTBEAT_MS, "--parity",
                               "0.05"), stdout=self.log, stderr=self.log)
        self.wait_tcp(self.collector, self.port)

    def env_client(self):
        e = dict(os.environ)
        e.update({"PARITY_COLLECTOR": self.endpoint,
                  "PARITY_COLLECTOR_KEY": self.key("collector"),
                  "PARITY_KEY": self.key("admin"), "HOME": self.root})
        e.pop("XDG_CONFIG_HOME", None)
        return e

    def bisect(self, *args, timeout=60):
        return self.parity("bisect", *args, timeout=timeout)

    def status(self, bid):
        return self.pjson("bisect", "status", str(bid), "--json") or {}


def start_fleet(w):
    w.start_collector()
    for n in HOSTS:
        w.start_agent(n)
    ok(w.wait_online(list(HOSTS), True), "three agents are online")


def job_row_state(w, job, host):
    got = tj.requests(w, [("job", json.dumps({"job": job}))])
    try:
        body = json.loads(got[0][1])
    except ValueError:
        return None
    for h in body.get("hosts", []):
        if h.get("host") == host:
            return h.get("state")
    return None


def case_find():
    w = World()
    try:
        start_fleet(w)
        t0 = time.time()
        p = subprocess.Popen(
            [tj.PARITY, "bisect", "start", "--suite", "build", "--bench",
             "tool", "--good", "c00", "--bad", "c63", "--commits", w.commits,
             "--hosts", "alpha,beta,gamma", "--wait"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=w.env_client())
        try:
            out, err = p.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        wall = time.time() - t0
        diag("bisect --wait took %.0f s\n%s%s" % (wall, out, err))
        ok(p.returncode == 0, "bisect start --wait exits 0 (%d)" %
           p.returncode)
        ok("done: the first bad commit is c37\n" in out and
           "  c37 (after c36): x1." in out,
           "it names c37, after c36")
        b = w.status(1)
        res = b.get("result") or {}
        cs = res.get("culprits", [])
        ok(len(cs) == 1 and cs[0]["commit"] == "c37" and
           cs[0]["previous"] == "c36" and not res.get("spread"),
           "the result: one culprit, c37 (%s)" % [c.get("commit")
                                                  for c in cs])
        hv = {h["host"]: h for h in (cs[0]["hosts"] if cs else [])}
        ok(sorted(hv) == list(HOSTS) and
           all(h["outcome"] == "loss" and 1.05 < h["ratio"] < 1.16
               for h in hv.values()),
           "each host: c37 against c36 is a loss near x1.10 (%s)" %
           {k: (v["outcome"], round(v["ratio"], 3)) for k, v in hv.items()})
        ok(res.get("rounds", 99) <= 6 and
           res.get("jobs") == 2 + res.get("rounds", 0),
           "6 narrowing rounds at most after the two ends, a job each "
           "(rounds %s, retries %s, jobs %s)" % (
               res.get("rounds"), res.get("retries"), res.get("jobs")))
        jobs = (w.pjson("jobs", "--json", "--limit", "100") or {}).get(
            "jobs", [])
        steps = b.get("steps", [])
        by_job = {j["job"]: j for j in jobs}
        ok(steps and all(by_job.get(s["job"], {}).get("tags") ==
                         {"commit": s["commit"], "bisect": "1"}
                         for s in steps),
           "every step is a job tagged commit=SHA and bisect=1")
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST)
    cases = {"find": case_find}
    cases[sys.argv[1]]()
    tj.pf.finish()


if __name__ == "__main__":
    main()
