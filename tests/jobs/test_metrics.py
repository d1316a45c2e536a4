#!/usr/bin/env python3
"""test_metrics.py BUILD_DIR -- the fleet judges CPU time and peak memory
(TAP).

docs/verdict.md "Metrics", docs/suites.md "Metrics". Real processes, as
tests/jobs/test_jobs.py (whose World fixture this imports): a
parity-collector with its private PostgreSQL at the default --parity
0.04, two parity-agent daemons (alpha, beta), the `parity` client,
127.0.0.1 only.

Suite "mem" tracks [wall, cpu, peak_rss]: its subject arm touches 115
MiB (parity-testprog mem), the other 100. `parity run mem --wait` stores
a verdict per metric and host: `verdicts --latest --metric peak_rss`
says loss on both hosts (ratio near 1.15), each verdict naming its
metric and the floor it used, pooled from the host's calibration runs.
Suite "rss" tracks [peak_rss] alone, of an A/A pair whose wall times
differ (20 ms asleep against 10): `--fail-on loss` passes (wall is not
tracked), while on "mem" it fails naming peak_rss. `parity hosts` shows
each host's cpu and peak_rss floors. Errors: --metric's, the request's
"metric", a suite's unknown metric (refused by the agent with its line
and column).
"""
import json
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_jobs as tj  # noqa: E402  (World, ok, diag)

ok, diag = tj.ok, tj.diag
TESTPROG, = tj.pf.built("tests/helpers/parity-testprog")
HOSTS = ("alpha", "beta")
MEM = """suite: mem
defaults:
  runs: 8
  warmup: 1
  metrics: [wall, cpu, peak_rss]
benchmarks:
  - name: grow
    arms:
      - name: big
        subject: true
        command: [%(p)s, mem, "115"]
      - name: small
        command: [%(p)s, mem, "100"]
""" % {"p": TESTPROG}
RSS = """suite: rss
defaults:
  runs: 6
  warmup: 1
benchmarks:
  - name: same
    metrics: [peak_rss]
    arms:
      - name: slow
        subject: true
        command: [%(p)s, sleep, "20000"]
      - name: fast
        command: [%(p)s, sleep, "10000"]
""" % {"p": TESTPROG}
BAD = """suite: bad
benchmarks:
  - name: x
    metrics: [wall, rss]
    arms:
      - {name: a, command: ["true"]}
      - {name: b, command: ["true"]}
"""


def job_of(r):
    line = [x for x in r.stderr.splitlines() if x.startswith("job ")]
    return line[0].split()[1].rstrip(":") if line else "?"


def by_host(cmp):
    return {h["host"]: h.get("verdict", {}) for h in cmp.get("hosts", [])}


def check_mem(w):
    r = w.parity("run", "mem", "--wait", timeout=240)
    ok(r.returncode == 0, "parity run mem --wait: exit 0 (%d)"
       % r.returncode) or diag(r.stdout[-1500:] + r.stderr[-500:])
    job = job_of(r)
    ok("grow (cpu)" in r.stdout and "grow (peak_rss)" in r.stdout,
       "--wait's table has a row per metric, named with it") or \
        diag(r.stdout[-1500:])
    v = w.pjson("verdicts", "--latest", "--metric", "peak_rss", "--json")
    cmps = (v or {}).get("comparisons", [])
    ok(v and v.get("job") == job and len(cmps) == 1 and
       cmps[0].get("metric") == "peak_rss" and cmps[0].get("tracked") is
       True, "verdicts --latest --metric peak_rss: one comparison, of "
       "peak_rss, tracked (%s)" % [(c.get("metric"), c.get("tracked"))
                                    for c in cmps])
    hv = by_host(cmps[0]) if cmps else {}
    got = {h: (x.get("outcome"), round(x.get("ratio", 0), 3))
           for h, x in hv.items()}
    ok(sorted(got) == list(HOSTS) and
       all(o == "loss" and 1.08 < ratio < 1.2 for o, ratio in got.values()),
       "peak_rss: loss on both hosts, ratio near 1.15 (%s)" % got)
    # A host's first job: its session-start calibration and the rounds'
    # no-op runs are all the floor has (under 100: the resolution).
    ok(all(x.get("metric") == "peak_rss" and x.get("floor_us", 0) >= 4 and
           x.get("floor_samples", 0) > 50 and
           x.get("floor_default") is (x.get("floor_samples") < 100)
           for x in hv.values()),
       "each verdict names its metric and its floor: at least 4 KiB, the "
       "count of calibration runs it pooled (%s)"
       % {h: (x.get("floor_us"), x.get("floor_samples"),
              x.get("floor_default")) for h, x in hv.items()})
    table = w.parity("verdicts", "--latest", "--metric", "peak_rss")
    lines = table.stdout.splitlines()
    ok(table.returncode == 0 and any(x.startswith("grow (peak_rss)") and
                                     x.count("loss") >= 2 for x in lines),
       "the table's row: grow (peak_rss), a loss per host") or \
        diag(table.stdout)
    ok(all(any(x.startswith("%s: peak_rss floor " % h) and " KiB from " in x
               for x in lines) for h in HOSTS),
       "a line per host gives its peak_rss floor in KiB") or \
        diag(table.stdout)
    cpu = w.pjson("verdicts", job, "--metric", "cpu", "--json") or {}
    cc = (cpu.get("comparisons") or [{}])[0]
    ok(cc.get("metric") == "cpu" and
       all(x.get("source") in ("task_clock", "rusage") and
           x.get("metric") == "cpu" for x in by_host(cc).values()) and
       len(by_host(cc)) == 2, "--metric cpu: each host's verdict says where "
       "its CPU time came from (%s)"
       % {h: x.get("source") for h, x in by_host(cc).items()})
    wall = w.pjson("verdicts", job, "--json") or {}
    ok([c.get("metric") for c in wall.get("comparisons", [])] == ["wall"],
       "without --metric: wall time's verdicts alone")
    every = w.pjson("verdicts", job, "--metric", "all", "--json") or {}
    ok([c.get("metric") for c in every.get("comparisons", [])] ==
       ["wall", "cpu", "peak_rss"], "--metric all: wall, cpu, peak_rss, in "
       "that order")
    stored = w.psql("SELECT string_agg(metric || ':' || COALESCE("
                    "metric_source, '-'), ',' ORDER BY metric) FROM verdicts "
                    "v JOIN runs r ON r.id = v.run WHERE r.job_id = '%s' AND "
                    "r.host_id = (SELECT min(host_id) FROM runs WHERE job_id "
                    "= '%s')" % (job, job)) or ""
    ok(stored.startswith("cpu:") and stored.endswith(",peak_rss:-,wall:-"),
       "PostgreSQL holds a verdict per metric, cpu's with its source (%s)"
       % stored)
    run = hv and [h for h in cmps[0]["hosts"] if h["host"] == "alpha"][0].get(
        "run_id")
    doc = w.pjson("show", run or "?") or {}
    b = (doc.get("benchmarks") or [{}])[0]
    m = b.get("metrics", {})
    ok(doc.get("metrics") == ["wall", "cpu", "peak_rss"] and
       m.get("peak_rss", {}).get("unit") == "KiB" and
       m["peak_rss"]["verdict"]["small"]["outcome"] == "loss" and
       m.get("cpu", {}).get("source") in ("task_clock", "rusage") and
       set(b.get("verdict", {})) == {"small"},
       "show RUN: schema 3 for wall, the others under the benchmark's "
       "metrics, as a results file holds them (%s)" % sorted(m))
    one = w.pjson("show", run or "?", "--metric", "peak_rss") or {}
    ob = (one.get("benchmarks") or [{}])[0]
    ok(sorted(ob.get("metrics", {})) == ["peak_rss"] and
       one.get("metrics") == ["wall", "peak_rss"] and
       set(ob.get("verdict", {})) == {"small"},
       "show RUN --metric peak_rss: that metric's verdicts beside wall "
       "time's schema-3 verdict (%s)" % sorted(ob.get("metrics", {})))
    r = w.parity("show", run or "?", "--metric", "rss")
    ok(r.returncode == 2 and r.stderr.strip() == "parity show: --metric "
       "rss: want wall, cpu or peak_rss", "show --metric rss: exit 2, its "
       "message (%r)" % r.stderr)
    r = w.parity("report", job)
    rows = [x.split("|")[1].strip() for x in r.stdout.splitlines()
            if x.startswith("| grow")]
    # Markdown: the name's "_" escaped.
    ok(r.returncode == 0 and
       rows == ["grow", "grow (cpu)", "grow (peak\\_rss)"],
       "report JOB: a verdict row per metric (%s)" % rows) or \
        diag(r.stdout[:1500])
    r = w.parity("report", job, "--metric", "peak_rss")
    rows = [x.split("|")[1].strip() for x in r.stdout.splitlines()
            if x.startswith("| grow")]
    ok(r.returncode == 0 and rows == ["grow (peak\\_rss)"],
       "report JOB --metric peak_rss: that metric's row alone (%s)" % rows)
    return job


def check_gate(w):
    r = w.parity("run", "mem", "--wait", "--fail-on", "loss", timeout=240)
    fails = [x.split() for x in r.stdout.splitlines()
             if x.rstrip().endswith(" FAIL")]
    ok(r.returncode == 1 and "the gate failed" in r.stderr and
       any(x[:2] == ["grow", "(peak_rss)"] for x in fails),
       "mem --fail-on loss: the gate fails, a FAIL row names peak_rss "
       "(%d, %s)" % (r.returncode, fails)) or diag(r.stdout[-2000:])
    ok(any(x.startswith("  grow (peak_rss) on ") and ": loss: ratio " in x
           and " KiB" in x for x in r.stdout.splitlines()),
       "... and its reason line says which metric, the floor in KiB") or \
        diag(r.stdout[-2000:])
    r = w.parity("run", "rss", "--wait", "--fail-on", "loss", timeout=240)
    ok(r.returncode == 0 and "gate passed" in r.stdout,
       "rss --fail-on loss (20 ms against 10, peak_rss tracked alone): the "
       "gate passes (%d)" % r.returncode) or diag(r.stdout[-2000:] +
                                                 r.stderr[-400:])
    v = w.pjson("verdicts", "--latest", "--metric", "all", "--json") or {}
    cm = {c.get("metric"): c for c in v.get("comparisons", [])}
    walls = {h: x.get("outcome") for h, x in
             by_host(cm.get("wall", {})).items()}
    rss = {h: x.get("outcome") for h, x in
           by_host(cm.get("peak_rss", {})).items()}
    ok(cm.get("wall", {}).get("tracked") is False and
       walls == {"alpha": "loss", "beta": "loss"} and
       cm.get("peak_rss", {}).get("tracked") is True and
       rss == {"alpha": "parity", "beta": "parity"},
       "its wall verdicts are losses, not tracked; peak_rss parity (%s, %s)"
       % (walls, rss))


def check_hosts(w):
    h = w.pjson("hosts", "--json") or {}
    mf = {x["name"]: x.get("metric_floors", {}) for x in h.get("hosts", [])}
    ok(all(sorted(mf.get(n, {})) == ["cpu", "peak_rss"] and
           mf[n]["peak_rss"]["floor"] >= 4 and
           mf[n]["peak_rss"]["samples"] >= 100 and
           mf[n]["cpu"]["source"] in ("task_clock", "rusage")
           for n in HOSTS),
       "hosts --json: each host's cpu and peak_rss floors (%s)" % mf)
    t = w.parity("hosts")
    head = t.stdout.splitlines()[0] if t.stdout else ""
    ok("cpu floor" in head and "rss floor" in head and
       all(any(x.startswith(n) and " KiB" in x for x in
               t.stdout.splitlines()) for n in HOSTS),
       "the hosts table has cpu and rss floor columns") or diag(t.stdout)


def check_errors(w):
    r = w.parity("verdicts", "--latest", "--metric", "rss")
    ok(r.returncode == 2 and r.stderr.strip() == "parity verdicts: --metric "
       "rss: want wall, cpu, peak_rss or all", "--metric rss: exit 2 and "
       "its message (%r)" % r.stderr)
    ans = tj.requests(w, [("verdicts", '{"metric": "rss"}'),
                          ("verdicts", '{"metric": 3}')])
    want = '"metric" must be wall, cpu, peak_rss or all'
    ok(ans == [("1", want)] * 2, "a verdicts request's bad \"metric\": "
       "status 1 and its message (%s)" % ans)
    want = ('bad.yaml:4:21: metrics: unknown metric "rss" (want wall, cpu '
            'or peak_rss) (not offered)')
    logs = []
    for n in HOSTS:
        with open(os.path.join(w.root, "agent-" + n, "agent.log")) as f:
            logs.append([x for x in f if "event=suite_invalid" in x])
    ok(all(len(x) >= 1 and x[0].rstrip().endswith(want) for x in logs),
       "a suite's unknown metric: each agent logs it with its line and "
       "column and does not offer the suite (%s)" % logs)
    r = w.parity("run", "bad", "--wait", timeout=60)
    ok(r.returncode != 0, "parity run bad: refused (%d: %s)"
       % (r.returncode, r.stderr.strip()[-200:]))


def case_metrics():
    w = tj.World()
    try:
        w.write_suites({"mem.yaml": MEM, "rss.yaml": RSS, "bad.yaml": BAD})
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return
        check_mem(w)
        check_gate(w)
        check_hosts(w)
        check_errors(w)
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST, TESTPROG)
    case_metrics()
    tj.pf.finish()


if __name__ == "__main__":
    main()
