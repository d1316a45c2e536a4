#!/usr/bin/env python3
"""test_metrics.py BUILD_DIR -- history per metric (TAP).

docs/regressions.md "Metrics", docs/suites.md "Metrics". Real processes,
as tests/jobs (whose World fixture this imports): a parity-collector with
its private PostgreSQL, two parity-agent daemons (alpha, beta), the
`parity` client, 127.0.0.1 only, the collector's default --parity (4 %).

Suite "grow" says `revision: commit` and tracks [wall, cpu, peak_rss].
Its subject touches 20 MiB and sleeps 150 ms (parity-testprog), 23 MiB
from commit c37 on: peak memory 14 % more, and wall time about 2.5 ms
(1.6 %) longer, the page faults of 3 MiB on this VM; the other arm is
the c00 subject. History jobs
--var commit=c30 .. c44:
  - `parity regressions` lists one peak_rss change point per host,
    between c36 and c37, as a regression, and one event of 2 hosts;
  - it lists none of wall time (a change point within noise is counted,
    never listed);
  - `regressions --metric peak_rss` shows them (`grow (peak_rss)`),
    `--metric wall` none, `--metric rss` is refused;
  - `parity verdicts --latest --metric peak_rss` says loss on both hosts;
  - `parity history grow --metric peak_rss`: parity to c36, loss from c37;
  - `parity report --site`: the benchmark's page has a plot per host and
    metric, peak_rss's axis in MiB.
"""
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402

ok, diag = tj.ok, tj.diag
TESTPROG, = tj.pf.built("tests/helpers/parity-testprog")
HOSTS = ("alpha", "beta")
COMMITS = ["c%02d" % i for i in range(30, 45)]
GROW = """suite: grow
revision: commit
variables:
  commit: c00
  testprog: %s
defaults:
  runs: 5
  warmup: 1
  metrics: [wall, cpu, peak_rss]
benchmarks:
  - name: grow
    arms:
      - name: subject
        subject: true
        shell: 'case "$PARITY_VAR_COMMIT" in c3[7-9]|c4?) m=23 ;; *) m=20 ;;
          esac; exec "$PARITY_VAR_TESTPROG" mem $m sleep 150000'
      - name: other
        command: ["${testprog}", mem, "20", sleep, "150000"]
""" % TESTPROG


def run_job(w, *args):
    r = w.parity("run", *args, "--wait", timeout=180)
    return r if r.returncode == 0 else diag(r.stderr[-300:])


def settled(w, timeout=120):
    """The regressions answer once detection has the job of c44 on both
    hosts and the answer stayed the same for 3 s (detection trails the
    writer)."""
    last, since, body = None, time.time(), {}
    end = time.time() + timeout
    while time.time() < end:
        body = w.pjson("regressions", "--json") or {}
        evs = [e for e in body.get("change_points", {}).get("events", {})
               .get("open", []) if e.get("quantity") == "peak_rss"]
        cur = json.dumps(body.get("change_points"), sort_keys=True)
        if cur != last:
            last, since = cur, time.time()
        if (len(evs) == 1 and evs[0]["hosts_with_step"] == 2 and
                time.time() - since > 3):
            return body
        time.sleep(0.5)
    diag("change points: %s" % last)
    return body


def check_history(w):
    good = sum(bool(run_job(w, "grow", "--var", "commit=" + c))
               for c in COMMITS)
    ok(good == len(COMMITS), "15 history jobs, --var commit=c30 .. c44 "
       "(%d ran)" % good)
    body = settled(w)
    cps = body.get("change_points", {})
    live = cps.get("open", []) + cps.get("acked", [])
    rss = [c for c in live if c.get("quantity") == "peak_rss"]
    got = sorted((c["host"], c["before"]["tags"].get("commit"),
                  c["after"]["tags"].get("commit"), c["regression"])
                 for c in rss)
    ok(got == [("alpha", "c36", "c37", True), ("beta", "c36", "c37", True)],
       "one peak_rss change point per host, between c36 and c37, a "
       "regression (%s)" % got)
    ok(all(1.08 < c["magnitude"] < 1.2 for c in rss),
       "each a step of about x1.14 (%s)" % [round(c["magnitude"], 3)
                                            for c in rss])
    walls = [(c["host"], c["metric"], round(c["magnitude"], 3),
              c["after"]["tags"].get("commit")) for c in live
             if c.get("quantity", "wall") == "wall" and
             not c["within_noise"]]
    ok(walls == [], "none of wall time listed (%s)" % walls)
    evs = [e for e in cps.get("events", {}).get("open", [])
           if e.get("quantity") == "peak_rss"]
    ok(len(evs) == 1 and sorted(evs[0]["hosts"]) == list(HOSTS) and
       evs[0]["after"]["tags"].get("commit") == "c37",
       "one peak_rss event, on alpha and beta, at c37")
    r = w.parity("regressions", "--metric", "peak_rss")
    lines = r.stdout.splitlines()
    ok(r.returncode == 1 and
       sum(1 for x in lines if " grow (peak_rss) " in x and "c36" in x and
           "c37" in x and not x.startswith("  #")) == 2 and
       any(x.startswith("  #") and "grow (peak_rss) (subject vs other)" in x
           and "slower on 2 of 2 hosts" in x for x in lines),
       "regressions --metric peak_rss: exit 1, the event and a row per "
       "host, named grow (peak_rss)") or diag(r.stdout)
    ok(lines and lines[-1] == "2 open regressions, 0 other open change "
       "points, 0 acked; against the previous job: 0 worse, 0 better, 0 "
       "unchanged, 0 with no earlier verdict", "... its counts are of "
       "peak_rss alone (the verdicts against the previous job are wall "
       "time's)") or diag(lines[-1:])
    r = w.parity("regressions", "--metric", "wall", "--json")
    wb = json.loads(r.stdout) if r.stdout.startswith("{") else {}
    wo = [c for c in wb.get("change_points", {}).get("open", [])
          if not c["within_noise"]]
    ok(r.returncode == 0 and not wo, "regressions --metric wall: exit 0, "
       "no change point outside noise (%s)" % [(c["host"], c["magnitude"])
                                               for c in wo])
    r = w.parity("regressions", "--metric", "rss")
    ok(r.returncode == 2 and r.stderr.strip() == "parity regressions: "
       "--metric rss: want wall, cpu or peak_rss", "--metric rss: exit 2, "
       "its message (%r)" % r.stderr)
    v = w.pjson("verdicts", "--latest", "--metric", "peak_rss", "--json")
    hv = {h["host"]: h.get("verdict", {}).get("outcome") for h in
          ((v or {}).get("comparisons") or [{}])[0].get("hosts", [])}
    ok(hv == {"alpha": "loss", "beta": "loss"}, "verdicts --latest "
       "--metric peak_rss: loss on both hosts (%s)" % hv)
    h = w.pjson("history", "grow", "--metric", "peak_rss", "--json") or {}
    rows = ((h.get("pairs") or [{}])[0]).get("rows", [])
    seen = [(x["tags"].get("commit"), sorted(
        (e["host"], e.get("verdict", {}).get("outcome")) for e in x["hosts"]))
        for x in rows]
    want = [(c, [("alpha", "loss" if c >= "c37" else "parity"),
                 ("beta", "loss" if c >= "c37" else "parity")])
            for c in COMMITS]
    ok(h.get("metric") == "peak_rss" and seen == want, "history grow "
       "--metric peak_rss: parity on both hosts to c36, loss from c37 on "
       "(%s)" % [(c, [o for _, o in x]) for c, x in seen])
    r = w.parity("history", "grow", "--metric", "peak_rss")
    ok(r.returncode == 0 and r.stdout.startswith(
        "grow (peak_rss): subject vs other  (suite grow)\n"),
       "its table is named grow (peak_rss)") or diag(r.stdout[:300])
    r = w.parity("history", "grow", "--metric", "rss")
    ok(r.returncode == 2 and r.stderr.strip() == "parity history: --metric "
       "rss: want wall, cpu or peak_rss", "history --metric rss: exit 2, "
       "its message (%r)" % r.stderr)
    ans = tj.requests(w, [("history", '{"benchmark": "grow", "metric": '
                                      '"rss"}')])
    ok(ans == [("1", '"metric" must be wall, cpu or peak_rss')],
       "a history request's bad \"metric\": status 1, its message (%s)"
       % ans)
    site = os.path.join(w.root, "site")
    r = w.parity("report", "--site", site, timeout=120)
    page = [f for f in os.listdir(site) if f.startswith("bench-")] \
        if r.returncode == 0 else []
    html = open(os.path.join(site, page[0])).read() if len(page) == 1 else ""
    titles = re.findall(r'<section class="series">\n<h2>([^<]*)</h2>', html)
    ok(sorted(titles) == sorted("%s: subject vs other%s" % (h, m) for h in
                                HOSTS for m in ("", ", cpu", ", peak_rss")),
       "report --site: the benchmark's page has a plot per host and metric "
       "(%s)" % titles) or diag(r.stderr[-300:])
    rss = html[html.find("alpha: subject vs other, peak_rss"):]
    rss = rss[:rss.find("</section>")]
    ok("<svg" in rss and " MiB</text>" in rss and " µs</text>" not in rss,
       "the peak_rss plot's axis is in MiB, not µs")
    kept = w.psql("SELECT string_agg(DISTINCT metric, ',' ORDER BY metric) "
                  "FROM detect_windows")
    ok(kept == "cpu,peak_rss,wall", "detection keeps a window per metric "
       "(%s)" % kept)


def case_metrics():
    w = tj.World()
    try:
        w.write_suites({"grow.yaml": GROW})
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return
        check_history(w)
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST, TESTPROG)
    case_metrics()
    tj.pf.finish()


if __name__ == "__main__":
    main()
