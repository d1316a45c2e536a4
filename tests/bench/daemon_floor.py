#!/usr/bin/env python3
"""daemon_floor.py -- the daemon's floor against a local run's, on this
machine, in the same minute (docs/performance.md "The daemon's floor").

    tests/bench/daemon_floor.py [--runs N] [--build DIR]
                                [--compare OTHER_BUILD_DIR] [--json]

For each build (--build, default ./build; and --compare's, when given):
its checkout's deploy/quickstart.sh --keep (the checkout beside the build
dir, else this one's), N times in a row on one var dir of its own
(the second and later runs keep the stores, as a user's would). After
each run, in the same minute:

  hosts       the floor `parity hosts` shows for alpha and beta, and
              how many no-op runs it pools
  local       `parity compare true true`'s floor (the peer: a local run,
              its own calibration store kept across the N runs), and
              the startup verdict of `parity-agent run
              examples/suites/example.yaml`, with `--only startup` and
              of the whole suite (as the quickstart's job runs it)
  quickstart  the `startup` verdict of the quickstart's job on each host

and after the last run, what the agent's own threads cost during one
more job: per thread (ag-net, ag-watch, ZeroMQ's, the main thread that
measures), its wake-ups (context switches) and CPU time, from
/proc/PID/task/*/status and schedstat.

Prints one line per run: the floors, the ratio hosts/local, and whether
the quickstart's startup verdicts equal the local run's; with
--compare, the same for the other build and the ratio of the two
builds' host floors. Exit 0 (a benchmark reports; it does not judge).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOSTS = ("alpha", "beta")


def run(cmd, env=None, timeout=600, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=cwd)


def pjson(cmd, env=None):
    r = run(cmd, env=env)
    try:
        return json.loads(r.stdout)
    except ValueError:
        sys.stderr.write("daemon_floor: %s: rc %d\n%s\n" % (
            " ".join(cmd), r.returncode, r.stderr[-2000:]))
        return None


class Build:
    """One build's quickstart var dir, client settings and local store."""

    def __init__(self, build, work, label):
        self.build = os.path.abspath(build)
        self.label = label
        self.var = os.path.join(work, label + "-var")
        self.cache = os.path.join(work, label + "-cache")
        os.makedirs(self.cache, exist_ok=True)
        self.parity = os.path.join(self.build, "collector", "client",
                                   "parity")
        self.agent = os.path.join(self.build, "agent", "parity-agent")
        # The build's own quickstart (its checkout's, beside the build
        # dir) when there is one: an older one waits for what its
        # agents did, not for what this checkout's do.
        own = os.path.join(os.path.dirname(self.build), "deploy",
                           "quickstart.sh")
        self.quickstart_sh = own if os.access(own, os.X_OK) else \
            os.path.join(ROOT, "deploy", "quickstart.sh")

    def env(self):
        e = dict(os.environ)
        e.update({"PARITY_QUICKSTART_BUILD": self.build,
                  "PARITY_QUICKSTART_VAR": self.var,
                  "XDG_CACHE_HOME": self.cache})
        e.pop("PARITY_MACHINE_LOCK", None)   # the default, as a user's
        if os.path.exists(os.path.join(self.var, "port")):
            with open(os.path.join(self.var, "port")) as f:
                port = f.read().strip()
            e.update({"PARITY_COLLECTOR": "tcp://127.0.0.1:" + port,
                      "PARITY_COLLECTOR_KEY": os.path.join(
                          self.var, "keys", "collector"),
                      "PARITY_KEY": os.path.join(self.var, "keys", "admin")})
        return e

    def quickstart(self, arg):
        return run([self.quickstart_sh] + ([arg] if arg else []),
                   env=self.env(), timeout=900)


def startup_verdicts(doc):
    """{host: (outcome, ratio, tolerance)} of benchmark startup."""
    out = {}
    for c in (doc or {}).get("comparisons", []):
        if c.get("benchmark") != "startup":
            continue
        for h in c.get("hosts", []):
            v = h.get("verdict") or {}
            out[h["host"]] = (v.get("outcome"), v.get("ratio"),
                              v.get("tolerance"))
    return out


def local_figures(b):
    """The local peer in this minute: compare's floor, and the startup
    verdict of parity-agent run on the example suite."""
    cmp = pjson([b.parity, "compare", "true", "true", "--json"], b.env())
    fl = (cmp or {}).get("floor", {})
    suite = os.path.join(ROOT, "examples", "suites", "example.yaml")

    def startup(extra):
        res = pjson([b.agent, "run", suite, "--json"] + extra, b.env())
        for bench in (res or {}).get("benchmarks", []):
            if bench.get("name") == "startup":
                return (bench.get("verdict") or {}).get("echo", {})
        return {}
    v = startup(["--only", "startup"])
    # The whole suite, as the quickstart's job runs it: startup after
    # gzip and md5sum, and a floor that pools the job's per-round runs.
    w = startup([])
    return {"compare_floor_us": fl.get("floor_us"),
            "compare_floor_samples": fl.get("calibration_samples"),
            "run_startup": (v.get("outcome"), v.get("ratio"),
                            v.get("tolerance")),
            "run_floor_us": v.get("floor_us"),
            "suite_startup": (w.get("outcome"), w.get("ratio"),
                              w.get("tolerance")),
            "suite_floor_us": w.get("floor_us")}


def thread_costs(pid):
    """{tid: (name, context switches, ns on CPU)} of a process."""
    out = {}
    base = "/proc/%d/task" % pid
    for tid in os.listdir(base):
        try:
            with open(os.path.join(base, tid, "comm")) as f:
                name = f.read().strip()
            sw = 0
            with open(os.path.join(base, tid, "status")) as f:
                for line in f:
                    if line.split(":")[0] in ("voluntary_ctxt_switches",
                                              "nonvoluntary_ctxt_switches"):
                        sw += int(line.split()[-1])
            with open(os.path.join(base, tid, "schedstat")) as f:
                ns = int(f.read().split()[0])
            out[tid] = (name, sw, ns)
        except OSError:
            continue
    return out


def job_thread_costs(b):
    """Per thread of agent alpha: wake-ups and CPU ms during one job."""
    with open(os.path.join(b.var, "agents", "alpha", "agent.pid")) as f:
        pid = int(f.read())
    before = thread_costs(pid)
    t0 = time.time()
    r = run([b.parity, "run", "example", "--wait", "--hosts", "alpha",
             "--var", "input=example-input.txt"], env=b.env())
    secs = time.time() - t0
    after = thread_costs(pid)
    rows = []
    for tid, (name, sw, ns) in sorted(after.items()):
        n0, sw0, ns0 = before.get(tid, (name, 0, 0))
        rows.append({"thread": name, "wakeups": sw - sw0,
                     "cpu_ms": round((ns - ns0) / 1e6, 1)})
    return {"job_s": round(secs, 1), "rc": r.returncode, "threads": rows}


def one_build(b, runs, costs):
    lines = []
    shutil.rmtree(b.var, ignore_errors=True)
    for i in range(1, runs + 1):
        b.quickstart("--stop")
        q = b.quickstart("--keep")
        if q.returncode != 0:
            sys.stderr.write("daemon_floor: quickstart failed:\n%s\n"
                             % (q.stdout + q.stderr)[-3000:])
            return lines
        hosts = pjson([b.parity, "hosts", "--json"], b.env()) or {}
        floors = {h["name"]: (h.get("floor_us"), h.get("floor_samples"))
                  for h in hosts.get("hosts", []) if h["name"] in HOSTS}
        verdicts = startup_verdicts(pjson([b.parity, "verdicts", "--latest",
                                           "--json"], b.env()))
        loc = local_figures(b)
        row = {"build": b.label, "run": i, "hosts": floors,
               "quickstart_startup": verdicts}
        row.update(loc)
        cf = loc["compare_floor_us"] or 0
        row["ratio"] = {h: round(f[0] / cf, 2) if cf and f[0] else None
                        for h, f in floors.items()}
        row["startup_agrees"] = {h: (v[0] == loc["run_startup"][0])
                                 for h, v in verdicts.items()}
        row["startup_agrees_suite"] = {
            h: (v[0] == loc["suite_startup"][0]) for h, v in verdicts.items()}
        if costs and i == runs:
            row["thread_costs"] = job_thread_costs(b)
        b.quickstart("--stop")
        lines.append(row)
    return lines


def show(row):
    f = row["hosts"]
    print("%-7s run %d  hosts %s  local compare %.1f us (%s runs)  "
          "ratio %s" % (
              row["build"], row["run"],
              ", ".join("%s %.1f us (%s runs)" % (h, v[0] or 0, v[1])
                        for h, v in sorted(f.items())),
              row["compare_floor_us"] or 0, row["compare_floor_samples"],
              ", ".join("%s %s" % (h, r) for h, r in
                        sorted(row["ratio"].items()))))
    def vd(v):
        return "%s %.3f (tol. %.3f)" % (v[0], v[1] or 0, v[2] or 0)
    print("         startup: quickstart %s; parity-agent run --only "
          "startup %s (floor %.1f us), equal: %s; the whole suite %s "
          "(floor %.1f us), equal: %s" % (
              ", ".join("%s %s" % (h, vd(v)) for h, v in
                        sorted(row["quickstart_startup"].items())),
              vd(row["run_startup"]), row["run_floor_us"] or 0,
              row["startup_agrees"], vd(row["suite_startup"]),
              row["suite_floor_us"] or 0, row["startup_agrees_suite"]))
    tc = row.get("thread_costs")
    if tc:
        print("         alpha's threads during one %.1f s job: %s" % (
            tc["job_s"], ", ".join("%s %d wake-ups %.1f ms" % (
                t["thread"], t["wakeups"], t["cpu_ms"])
                for t in tc["threads"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--compare", help="another build dir, measured the "
                    "same way after this one")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.runs < 1 or a.runs > 20:
        ap.error("--runs: 1 to 20")
    for d in [a.build] + ([a.compare] if a.compare else []):
        if not os.access(os.path.join(d, "agent", "parity-agent"), os.X_OK):
            ap.error("%s: no agent/parity-agent there (a meson build dir)"
                     % d)
    work = tempfile.mkdtemp(prefix="parity-daemon-floor-", dir="/var/tmp")
    os.chmod(work, 0o755)   # the postgres user reaches the var dirs
    rows = []
    try:
        builds = [Build(a.build, work, "this")]
        if a.compare:
            builds.append(Build(a.compare, work, "compare"))
        for b in builds:
            for row in one_build(b, a.runs, costs=True):
                rows.append(row)
                if not a.json:
                    show(row)
                    sys.stdout.flush()
        if a.compare and not a.json:
            for i in range(1, a.runs + 1):
                t = [r for r in rows if r["run"] == i]
                if len(t) == 2:
                    print("run %d: this build's host floors / the other's: "
                          "%s" % (i, ", ".join(
                              "%s %.2f" % (h, t[0]["hosts"][h][0]
                                           / t[1]["hosts"][h][0])
                              for h in HOSTS if t[1]["hosts"].get(h, (0,))[0])))
        if a.json:
            print(json.dumps(rows, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
