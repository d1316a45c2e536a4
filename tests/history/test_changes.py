#!/usr/bin/env python3
"""test_changes.py CASE BUILD_DIR -- change points over time (TAP).

Real processes, as tests/jobs (whose World fixture this imports): a
parity-collector with its private PostgreSQL, two parity-agent daemons
(alpha, beta), the `parity` client, 127.0.0.1 only.

  changes  suite "cp": benchmark "step" has a subject arm that sleeps
           as long as a file says (the "build" under test) against an
           arm that sleeps 0.06 s. Jobs tagged commit=k1..k12 run with
           the file at 0.06 s for k1..k6 and 0.12 s for k7..k12: the
           collector finds the step on both hosts as runs are stored,
           between k6 and k7, a regression of about 2x, "2 of 2" hosts,
           and `parity regressions` exits 1 until it is acked. Then a
           job with another value of the suite's variable is its own
           series (no change point from it), and every error message of
           ack and unack is pinned. The `series` request shows the
           runs, the change point's index and no annotation (nothing
           changed on the hosts). The window detection kept for each
           series (detect_windows) is the one it would read run by run.
"""
import json
import os
import re
import struct
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail)

ok, diag = tj.ok, tj.diag
HOSTS = ("alpha", "beta")
BEFORE, AFTER = "0.06", "0.12"
SUITE = """suite: cp
variables:
  size: "1"
defaults:
  runs: 5
  warmup: 1
benchmarks:
  - name: step
    arms:
      - name: new
        subject: true
        command: [sh, -c, "sleep $(cat %s) ; : ${size}"]
      - name: old
        command: [sh, -c, "sleep 0.06 ; : ${size}"]
"""


def run_job(w, *extra):
    r = w.parity("run", "cp", "--wait", *extra, timeout=120)
    return r.returncode == 0 or diag(r.stderr[-300:])


def wait_change_points(w, n, timeout=90, hosts=()):
    """The open change points once at least n are stored, and a
    regression on each of hosts (detection runs on its own thread, at a
    low priority, after each RunEnd's COMMIT: on a loaded machine it
    trails the jobs by many seconds)."""
    body = {}
    end = tj.time.time() + timeout
    while tj.time.time() < end:
        body = w.pjson("regressions", "--json") or {}
        cps = body.get("change_points", {}).get("open", [])
        seen = {c["host"] for c in cps if c["regression"]}
        if len(cps) >= n and all(h in seen for h in hosts):
            break
        tj.time.sleep(0.25)
    return body


# What detection reads run by run (co_detect.c s_read_full) for the
# window that ends at a kept row's newest run: ids and subject medians.
FULL_WINDOW = """SELECT string_agg(id || ':' || median, ' ' ORDER BY
 started_at_us) FROM (SELECT r.id, r.started_at_us, ss.median FROM runs r
 JOIN arms a1 ON a1.run = r.id AND a1.name = '%(subject)s'
 JOIN run_summaries ss ON ss.run = r.id AND ss.arm = a1.idx
 LEFT JOIN arms a2 ON a2.run = r.id AND a2.name = '%(other)s'
 LEFT JOIN run_summaries so ON so.run = r.id AND so.arm = a2.idx
 WHERE r.benchmark_id = %(bench)s AND r.host_id = %(host)s
 AND r.vars = '%(vars)s'::jsonb AND r.status = 'complete'
 AND r.started_at_us <= %(started)s AND ss.median IS NOT NULL
 AND ('%(other)s' = '' OR so.median IS NOT NULL)
 ORDER BY r.started_at_us DESC LIMIT 200) q"""


def check_kept_windows(w):
    """Each series' window that detection kept (detect_windows,
    migration 015: extended run by run as runs were stored) is the
    window it would read in full: the same runs, the same medians."""
    rows = w.psql("SELECT benchmark_id, host_id, vars::text, subject, "
                  "other, newest_run, newest_started_us, "
                  "encode(points, 'hex') FROM detect_windows") or ""
    good, seen = True, 0
    for line in rows.splitlines():
        bench, host, vars_, subject, other, newest, started, hexa = \
            line.split("|")
        raw = bytes.fromhex(hexa)
        n = (len(raw) - 5) // 104
        pts = [struct.unpack(">q6d6d", raw[5 + 104 * i:5 + 104 * (i + 1)])
               for i in range(n)]
        kept = " ".join("%d:%r" % (p[0], p[1]) for p in pts)
        full = w.psql(FULL_WINDOW % {
            "bench": bench, "host": host, "vars": vars_, "subject": subject,
            "other": other, "started": started}) or ""
        full = " ".join("%s:%r" % (x.split(":")[0], float(x.split(":")[1]))
                        for x in full.split())
        seen += 1
        if kept != full or not pts or pts[-1][0] != int(newest):
            good = False
            diag("kept %s\nfull %s" % (kept[:300], full[:300]))
    ok(good and seen >= len(HOSTS), "the windows detection kept are the "
       "windows it would read run by run (%d series)" % seen)


def case_changes():
    w = tj.World()
    try:
        delay = os.path.join(w.root, "delay")
        with open(os.path.join(w.suites, "cp.yaml"), "w") as f:
            f.write(SUITE % delay)
        with open(delay, "w") as f:
            f.write(BEFORE)
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return
        good = 0
        for k in range(1, 13):
            if k == 7:
                with open(delay, "w") as f:
                    f.write(AFTER)
            good += bool(run_job(w, "--tag", "commit=k%d" % k))
        ok(good == 12, "12 jobs ran (%d)" % good)

        body = wait_change_points(w, 2, hosts=HOSTS)
        check_kept_windows(w)
        cps = body.get("change_points", {}).get("open", [])
        regs = [c for c in cps if c["regression"]]
        ok(sorted({c["host"] for c in regs}) == list(HOSTS),
           "a regression on both hosts (%s)" %
           [(c["host"], c["metric"], c["magnitude"]) for c in cps])
        ok(all(c["before"]["tags"].get("commit") == "k6" and
               c["after"]["tags"].get("commit") == "k7" for c in regs) and
           regs, "each between k6 and k7 (%s)" %
           [(c["before"]["tags"], c["after"]["tags"]) for c in regs])
        ok(all(c["outcome"] == "loss" and not c["within_noise"] and
               c["metric"] in ("ratio", "subject") and
               # 60 -> 120 ms of sleep, plus each run's start-up, which
               # a loaded machine stretches (1.49 seen in CI's ASan pass)
               1.3 < c["magnitude"] < 2.6 for c in regs) and regs,
           "each a loss beyond the noise of about 2x (%s)" %
           [c["magnitude"] for c in regs])
        ok(all(c["hosts_with_step"] == 2 and c["hosts_total"] == 2
               for c in regs) and regs,
           "each says 2 of 2 hosts stepped (%s)" %
           [(c["hosts_with_step"], c["hosts_total"]) for c in regs])
        ok(all(c["annotations"] == [] and c["ack"] is None and
               c["benchmark"] == "step" and c["subject"] == "new" and
               c["other"] == "old" and c["vars"] == {} for c in regs) and
           regs, "no annotation (nothing changed on the hosts), not acked")
        r = w.parity("regressions")
        ok(r.returncode == 1 and r.stdout.startswith("events (1):\n  #") and
           "slower on 2 of 2 hosts between k6 and k7" in r.stdout and
           "\nchange points (" in r.stdout and "k6 .. k7" in r.stdout and
           "2 of 2" in r.stdout,
           "the table: exit 1, the commit range, 2 of 2 (%d)" %
           r.returncode) or diag(r.stdout + r.stderr)
        r = w.parity("regressions", "--host", "alpha", "--json")
        one = json.loads(r.stdout) if r.returncode in (0, 1) else {}
        ok({c["host"] for c in one.get("change_points", {}).get("open", [])}
           == {"alpha"}, "--host alpha lists alpha's alone")

        # history shows each series' change points at the job of the
        # first run after the step (table, CSV column, JSON series).
        r = w.parity("history", "step")
        ok(r.returncode == 0 and "\nchanges:\n" in r.stdout and
           all("%s, new vs old:" % h in r.stdout for h in HOSTS) and
           "(regression) at commit=k7 (first run after the change)" in
           r.stdout, "history step: the change points under the table") \
            or diag(r.stdout[-800:])
        r = w.parity("history", "step", "--csv", "--host", "alpha")
        lines = r.stdout.splitlines()
        k7 = [x for x in lines if "commit=k7" in x]
        ok(r.returncode == 0 and lines and lines[0].endswith(
           ",geomean_ratio,changes") and len(k7) == 1 and
           "(regression)" in k7[0] and
           all("(regression)" not in x for x in lines if x not in k7),
           "--csv: the changes column on k7's row alone (%s)" % k7)
        h = w.pjson("history", "step", "--json", "--host", "beta") or {}
        ok([x["host"] for x in h.get("series", [])] == ["beta"] and
           h["series"][0]["change_points"],
           "--json: the series of the asked host, with change points")

        # ack one host's regression: its event (both hosts, the same
        # jobs) is acked, exit 0, listed apart; unack one: exit 1.
        c = min(regs, key=lambda x: x["id"])
        r = w.parity("regressions", "ack", str(c["id"]), "--note",
                     "known: the new sleep")
        ok(r.returncode == 0 and r.stdout.strip() == "change point %d acked, "
           "with its event: 2 change points on alpha, beta" % c["id"],
           "ack one: its event's both hosts (%s)" % r.stdout.strip())
        r = w.parity("regressions")
        g = w.pjson("regressions", "--json") or {}
        ok(r.returncode == 0 and len(g["change_points"]["acked"]) ==
           len(regs) and all(a["ack"]["note"] == "known: the new sleep"
                             for a in g["change_points"]["acked"]),
           "acked: exit 0, listed apart with the note (%d)" % r.returncode)
        r = w.parity("regressions", "unack", str(regs[0]["id"]))
        ok(r.returncode == 0 and "open again" in r.stdout, "unack")
        ok(w.parity("regressions").returncode == 1,
           "an unacked regression fails again")

        # Another value of the suite's variable is another series.
        with open(delay, "w") as f:
            f.write(BEFORE)
        ok(run_job(w, "--tag", "commit=k13", "--var", "size=2"),
           "a job with size=2")
        tj.time.sleep(2)
        g = w.pjson("regressions", "--json") or {}
        allcps = g["change_points"]["open"] + g["change_points"]["acked"]
        ok(all(c["vars"] == {} for c in allcps) and
           len(allcps) == len(cps), "size=2's faster run is no step of "
           "the size=1 series (%d change points)" % len(allcps))

        # series: the runs, the change point's place.
        ans = tj.requests(w, [("series", json.dumps(
            {"benchmark": "step", "host": "alpha"}))])
        st, text = ans[0]
        s = json.loads(text) if st == "0" else {}
        lst = s.get("series", [])
        main = [x for x in lst if x["vars"] == {}]
        ok(len(lst) == 2 and len(main) == 1 and len(main[0]["runs"]) == 12,
           "series: alpha's size=1 and size=2 series, 12 runs in the "
           "first (%s)" % [(x["vars"], len(x["runs"])) for x in lst])
        idx = [c["index"] for c in main[0]["change_points"]] if main else []
        ok(main and 6 in idx and
           main[0]["runs"][6]["tags"].get("commit") == "k7" and
           main[0]["runs"][0]["subject"]["n"] == 5 and
           main[0]["runs"][0]["outcome"] in ("win", "parity", "loss"),
           "series: the change point at the first run after it, k7 (%s)"
           % idx)

        # The static site, from this collector: the regressions on the
        # overview, and the step's page with its change-point lines.
        site = os.path.join(w.root, "site")
        r = w.parity("report", "--site", site, timeout=120)
        index = os.path.join(site, "index.html")
        html = open(index).read() if os.path.exists(index) else ""
        pages = [n for n in os.listdir(site) if n.startswith("bench-")] \
            if os.path.isdir(site) else []
        page = open(os.path.join(site, pages[0])).read() if pages else ""
        ok(r.returncode == 0 and html.count('<tr class="cp" id="cp-') >= 2
           and html.count('<tr class="event" id="event-') == 1 and
           'class="loss"' in html and len(pages) == 1 and
           page.count('class="cp loss') >= 2,
           "report --site: the overview lists the open regressions, the "
           "step's page marks them (%d %s; pages %s)" %
           (r.returncode, r.stderr.strip()[-200:], pages))
        ok("http://" not in html + page and "https://" not in html + page,
           "the site names no external URL")
        # Its Atom feed: the step's event, linked to its row.
        feed = os.path.join(site, "regressions.xml")
        ev = re.search(r'<tr class="event" id="event-(\d+)"', html)
        text = open(feed).read() if os.path.exists(feed) else ""
        ids = re.findall(r"<id>urn:parity:event:(\d+)</id>", text)
        ok(ev and ids == [ev.group(1)] and
           'href="index.html#event-%s"' % ev.group(1) in text and
           "<title type=\"text\">slower: " in text,
           "report --site: regressions.xml has the step's event, linked "
           "to its row (%s, %s)" % (ev and ev.group(1), ids))

        # Errors, pinned.
        for args, code, want in [
            (("regressions", "ack", "1"), 2, "parity regressions ack: --note "
             "TEXT is required: say why the change is known"),
            (("regressions", "ack", "x1", "--note", "n"), 2,
             'parity regressions ack: "x1" is not a change point id'),
            (("regressions", "unack"), 2, "parity regressions unack: give "
             "one change point id (parity regressions lists them)"),
            (("regressions", "ack", "999999", "--note", "n"), 4,
             "parity regressions ack: no change point 999999"),
            (("regressions", "--host", ""), 2, 'parity regressions: --host '
             '"": want a host name of 1..200 bytes'),
        ]:
            r = w.parity(*args)
            ok(r.returncode == code and r.stderr.strip() == want,
               "%s: %d %s" % (" ".join(args), r.returncode,
                              r.stderr.strip()))
        ans = tj.requests(w, [("ack", '{"id": 1}'), ("series",
                                                    '{"runs": 1}')])
        ok(ans[0] == ("1", '"note" is required: say why the change is '
                      'known') and ans[1] == ("1", '"runs" must be an '
                                              'integer from 2 to 1000'),
           "request errors: %s" % ans)
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST)
    {"changes": case_changes}[sys.argv[1]]()
    tj.pf.finish()


if __name__ == "__main__":
    main()
