#!/usr/bin/env python3
"""test_history.py CASE BUILD_DIR -- history, regressions, report (TAP).

Real processes, as tests/jobs (whose World fixture this imports): a
parity-collector with its private PostgreSQL in a fresh temp dir, two
parity-agent daemons (alpha, beta), the `parity` client, 127.0.0.1 only.

  fleet   suite "hist" run as jobs tagged commit=c1, c2, c3, c4; its
          benchmark "grows" has a subject arm whose sleep is the
          variable ${delay}: the same as the other arm at c1 and c2
          (parity), twice as long at c3 (loss) and c4;
          "steady" is always a win. Then: history lists the jobs in
          order with every host's outcome; regressions exits 0 with c1,
          c2 only, and c3's other --var value is a new series
          (nothing to compare with, no regression); c4, with c3's
          variables, is compared with c3 (unchanged); report (Markdown,
          HTML) of a job holds every host's verdict and shows a
          benchmark called <script>alert(1)</script> verbatim. Every
          error message of the three verbs is pinned.
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail)

ok, diag = tj.ok, tj.diag

# "grows": the subject sleeps ${delay} against 0.15 s. Equal at c1 and
# c2 (parity: 0.15 s is long enough that a loaded host's spawn jitter of
# a few ms stays inside the 4 % parity), twice as long at c3 (loss),
# a third at c4 (win). "steady" is a win by a factor of three every
# time: unchanged, however noisy the host (two equal sleeps of 30 ms were
# seen to give a loss on a loaded ASan run).
SAME = "0.15"
SLOW = "0.3"
FAST = "0.05"
HIST_SUITE = """suite: hist
variables:
  delay: "%s"
defaults:
  runs: 7
  warmup: 1
benchmarks:
  - name: grows
    arms:
      - name: new
        subject: true
        command: [sleep, "${delay}"]
      - name: old
        command: [sleep, "%s"]
  - name: steady
    runs: 5
    arms:
      - name: "a|b"
        subject: true
        command: [sleep, "0.02"]
      - name: base
        command: [sleep, "0.06"]
""" % (SAME, SAME)

ESC_NAME = "<script>alert(1)</script>"
ESC_SUITE = """suite: esc
defaults:
  runs: 3
  warmup: 0
benchmarks:
  - name: "%s"
    arms:
      - name: "x&y"
        subject: true
        command: [sleep, "0.01"]
      - name: z
        command: [sleep, "0.02"]
""" % ESC_NAME

HOSTS = ("alpha", "beta")


def run_job(w, suite, *extra):
    r = w.parity("run", suite, "--wait", *extra, timeout=120)
    ok(r.returncode == 0, "parity run %s %s --wait exits 0 (%d: %s)" %
       (suite, " ".join(extra), r.returncode, r.stderr.strip()[-300:]))
    jobs = w.pjson("jobs", "--json") or {"jobs": [{}]}
    return jobs["jobs"][0].get("job", "?")


def outcomes(row):
    return {h["host"]: h.get("verdict", {}).get("outcome", "none")
            for h in row["hosts"]}


def pair(body, other):
    for p in body.get("pairs", []):
        if p["other"] == other:
            return p
    return {"rows": []}


def case_fleet():
    w = tj.World()
    try:
        w.write_suites({"hist.yaml": HIST_SUITE, "esc.yaml": ESC_SUITE})
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return

        # Before any job: an unknown benchmark, usage errors.
        r = w.parity("history", "grows")
        ok(r.returncode == 1 and r.stderr.strip() ==
           'parity history: no benchmark "grows" (parity verdicts lists '
           'the benchmarks of a job)', "history of an unknown benchmark: "
           "%d %s" % (r.returncode, r.stderr.strip()))
        r = w.parity("regressions")
        ok(r.returncode == 0 and "0 open regressions" in r.stdout,
           "regressions with no verdicts at all exits 0 (%d %s)" %
           (r.returncode, r.stdout.strip()))

        jobs = {}
        jobs["c1"] = run_job(w, "hist", "--tag", "commit=c1", "--tag",
                             "phase=early", "--var", "delay=" + SAME)
        jobs["c2"] = run_job(w, "hist", "--tag", "commit=c2", "--tag",
                             "phase=early", "--var", "delay=" + SAME)
        r = w.parity("regressions")
        ok(r.returncode == 0 and "0 worse" in r.stdout and
           "4 unchanged" in r.stdout,
           "with c1 and c2 only, regressions exits 0, 4 pairs unchanged "
           "(%d: %s %s)" % (r.returncode, r.stdout.strip(),
                            r.stderr.strip()))
        jobs["c3"] = run_job(w, "hist", "--tag", "commit=c3", "--tag",
                             "phase=late", "--var", "delay=" + SLOW)

        # -- history ----------------------------------------------------
        h = w.pjson("history", "grows", "--json") or {}
        p = pair(h, "old")
        rows = p["rows"]
        ok(len(h.get("pairs", [])) == 1 and len(rows) == 3,
           "history grows: one pair, three rows (%d)" % len(rows))
        ok([x["tags"].get("commit") for x in rows] == ["c1", "c2", "c3"] and
           [x["job"] for x in rows] == [jobs["c1"], jobs["c2"], jobs["c3"]],
           "the rows are the three jobs, oldest first, with their tags")
        ok(all(sorted(outcomes(x)) == list(HOSTS) for x in rows),
           "every row has a verdict of each host")
        got = [outcomes(x) for x in rows]
        ok(got[0] == {"alpha": "parity", "beta": "parity"} and
           got[1] == {"alpha": "parity", "beta": "parity"} and
           got[2] == {"alpha": "loss", "beta": "loss"},
           "outcomes: parity, parity, loss on both hosts (%s)" % got)
        s = rows[2].get("summary", {})
        ok(s.get("hosts") == 2 and s.get("loss") == 2 and
           s.get("consensus") == "loss on all 2 hosts" and
           s.get("geomean_ratio", 0) > 1.5,
           "c3's cross-host summary: %s" % s)
        r = w.parity("history", "grows")
        lines = r.stdout.splitlines()
        ok(r.returncode == 0 and lines[0] ==
           "grows: new vs old  (suite hist)" and
           re.search(r"\bwhen\s+job\s+tags\s+alpha\s+beta\s+geomean\s+"
                     r"summary", lines[1]) is not None,
           "the table: a title per pair and a column per host")
        body = [l for l in lines if jobs["c1"] in l or jobs["c3"] in l]
        ok(len(body) == 2 and "commit=c1" in body[0] and
           len(re.findall(r"parity \d\.\d{3}", body[0])) == 2 and "commit=c3" in body[1] and
           len(re.findall(r"loss \d\.\d{3}", body[1])) == 2 and
           "loss on all 2 hosts" in body[1],
           "the table's rows: c1 parity on both, c3 loss on both")
        ok(lines.index(body[0]) < lines.index(body[1]), "newest last")
        h = w.pjson("history", "grows", "--host", "beta", "--json") or {}
        ok(all([e["host"] for e in x["hosts"]] == ["beta"]
               for x in pair(h, "old")["rows"]) and
           len(pair(h, "old")["rows"]) == 3, "--host beta: beta only")
        h = w.pjson("history", "grows", "--tag", "commit=c2", "--json") or {}
        ok([x["tags"]["commit"] for x in pair(h, "old")["rows"]] == ["c2"],
           "--tag commit=c2: one row")
        h = w.pjson("history", "grows", "--limit", "2", "--json") or {}
        ok([x["tags"]["commit"] for x in pair(h, "old")["rows"]] ==
           ["c2", "c3"], "--limit 2: the newest two, oldest first")
        h = w.pjson("history", "steady", "--arm", "base", "--json") or {}
        ok(len(h.get("pairs", [])) == 1 and
           pair(h, "base").get("subject") == "a|b" and
           len(pair(h, "base")["rows"]) == 3, "--arm base: steady's pair")
        r = w.parity("history", "steady", "--csv")
        csv = r.stdout.splitlines()
        ok(r.returncode == 0 and csv[0].startswith("benchmark,suite,subject,"
                                                   "other,at,job,tags") and
           len(csv) == 1 + 3 * 2, "--csv: a header and one line per job and "
           "host (%d lines)" % len(csv))
        r = w.parity("history", "grows", "--host", "gamma")
        ok(r.returncode == 0 and "no verdicts of grows match" in r.stdout,
           "a host filter that matches nothing says so")

        # -- history errors ---------------------------------------------
        errors = [
            (("history", "nosuch"), 1, 'parity history: no benchmark '
             '"nosuch" (parity verdicts lists the benchmarks of a job)'),
            (("history", "grows", "--arm", "nosuch"), 1, 'parity history: '
             'benchmark "grows" has no verdict against an arm "nosuch"'),
            (("history", "grows", "--suite", "esc"), 1, 'parity history: '
             'no benchmark "grows" in suite "esc" (parity verdicts lists the '
             'benchmarks of a job)'),
            (("history",), 2, "parity history: which benchmark? (parity "
             "history BENCHMARK; parity verdicts lists them)"),
            (("history", "grows", "--tag", "commit"), 2,
             'parity history: --tag "commit": want KEY=VALUE'),
            (("history", "grows", "--tag", "=c1"), 2,
             'parity history: --tag "=c1": want KEY=VALUE'),
            (("history", "grows", "--limit", "0"), 2,
             'parity history: --limit "0": want 1..1000'),
            (("history", "grows", "--limit"), 2,
             "parity history: --limit needs a value"),
            (("history", "grows", "--json", "--csv"), 2,
             "parity history: give one of --json, --csv"),
            (("history", "grows", "steady"), 2, 'parity history: unexpected '
             'argument "steady" (parity history --help)'),
        ]

        # -- regressions ------------------------------------------------
        # c3 ran with --var delay=0.3: the job's variables are part of a
        # series, so c3 is not compared with c2's delay=0.15
        # (tests/history/test_changes.py has steps within one series).
        r = w.parity("regressions", "--json")
        g = {}
        try:
            g = json.loads(r.stdout)
        except ValueError:
            diag(r.stdout + r.stderr)
        ok(r.returncode == 0 and g.get("regressions") == [] and
           g.get("improvements") == [] and g.get("first") == 4 and
           g.get("change_points") == {"open": [], "acked": [],
                                      "superseded": [],
                                      "events": {"open": [], "acked": []},
                                      "truncated": False},
           "c3's other --var value is a new series: nothing worse, 4 pairs "
           "with no earlier verdict, no change point (%d %s)" %
           (r.returncode, r.stdout[-300:]))
        r = w.parity("regressions")
        ok(r.returncode == 0 and "0 open regressions, 0 other open change "
           "points, 0 acked; against the previous job: 0 worse, 0 better, "
           "0 unchanged, 4 with no earlier verdict" in r.stdout,
           "the summary line") or diag(r.stdout)
        r = w.parity("regressions", "--tag", "phase=early")
        ok(r.returncode == 0 and "0 worse, 0 better, 4 unchanged" in
           r.stdout, "--tag phase=early (c1, c2 only): 4 unchanged (%s)" %
           r.stdout.strip())
        r = w.parity("regressions", "--since", "1h", "--json")
        g = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(g.get("first") == 4 and g.get("unchanged") == 4,
           "--since 1h: c3's 4 pairs first in their series, c1-c2's 4 "
           "unchanged (%s %s)" % (g.get("first"), g.get("unchanged")))
        r = w.parity("regressions", "--jobs", "3", "--tag", "commit=c3")
        ok(r.returncode == 0 and "4 with no earlier verdict" in r.stdout,
           "--tag commit=c3: nothing earlier to compare with")
        errors += [
            (("regressions", "--since", "5x"), 2, 'parity regressions: '
             '--since "5x": want a duration such as 90s, 10m, 2h, 3d, 2w '
             '(at most 366d)'),
            (("regressions", "--since", "400d"), 2, 'parity regressions: '
             '--since "400d": want a duration such as 90s, 10m, 2h, 3d, 2w '
             '(at most 366d)'),
            (("regressions", "--jobs", "0"), 2,
             'parity regressions: --jobs "0": want 1..1000'),
            (("regressions", "--tag", "nokey"), 2,
             'parity regressions: --tag "nokey": want KEY=VALUE'),
            (("regressions", "--since", "1h", "--jobs", "2"), 2,
             "parity regressions: give --since or --jobs, not both"),
            (("regressions", "extra"), 2, 'parity regressions: unexpected '
             'argument "extra" (parity regressions --help)'),
            (("regressions", "--jobs"), 2,
             "parity regressions: --jobs needs a value"),
        ]

        # c4 runs with c3's variables: now that series has two jobs.
        jobs["c4"] = run_job(w, "hist", "--tag", "commit=c4", "--var",
                             "delay=" + SLOW)
        g = w.pjson("regressions", "--json") or {}
        ok(g.get("regressions") == [] and g.get("unchanged") == 4 and
           all(x.get("vars") == {"delay": SLOW} for x in g.get(
               "improvements", [])),
           "c4 against c3, same variables: unchanged (%s)" %
           [(x["benchmark"], x["host"], x["change"])
            for x in g.get("regressions", []) + g.get("improvements", [])])

        # c1 again, later: by time it is last; --by commit keeps it in
        # c1's place (job order of the commit tag's first job).
        run_job(w, "hist", "--tag", "commit=c1", "--var", "delay=" + SAME)
        order = [x["tags"].get("commit") for x in pair(
            w.pjson("history", "grows", "--json") or {}, "old")["rows"]]
        by = [x["tags"].get("commit") for x in pair(
            w.pjson("history", "grows", "--by", "commit", "--json") or {},
            "old")["rows"]]
        ok(order == ["c1", "c2", "c3", "c4", "c1"] and
           by == ["c1", "c1", "c2", "c3", "c4"],
           "--by commit: the re-run of c1 next to c1 (%s; by time %s)" %
           (by, order))
        errors += [
            (("history", "grows", "--by", "x" * 201), 2, 'parity history: '
             '--by "' + "x" * 60 + '...": want a tag name of at most 200 '
             'bytes'),
        ]

        # -- report -----------------------------------------------------
        jobs["esc"] = run_job(w, "esc", "--tag", "commit=c4")
        report_checks(w, jobs, errors)

        for args, code, msg in errors:
            r = w.parity(*args)
            ok(r.returncode == code and r.stderr.strip() == msg,
               "%s: exit %d, %s (got %d: %s)" % (" ".join(args), code, msg,
                                                 r.returncode,
                                                 r.stderr.strip()))
        raw_checks(w)
        for verb in ("history", "regressions", "report"):
            r = w.parity(verb, "--help")
            ok(r.returncode == 0 and "usage: parity " + verb in r.stdout,
               "parity %s --help" % verb)
        # Not an admin key: refused, and regressions says so with 4.
        r = w.parity("regressions", key="stranger")
        ok(r.returncode == 4 and "forbidden" in r.stderr,
           "regressions from a non-admin key exits 4 (%d %s)" %
           (r.returncode, r.stderr.strip()))
        r = w.parity("history", "grows", key="stranger")
        ok(r.returncode == 1 and "forbidden" in r.stderr,
           "history from a non-admin key is forbidden")
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def raw_checks(w):
    """The collector's own argument checks (docs/protocol.md 10.11-10.13),
    with raw Requests the client never sends."""
    cases = [
        ("history", '{}', "1", '"benchmark" (a benchmark\'s name) is '
         'required'),
        ("history", '{"benchmark": "grows", "colour": 1}', "1",
         'unknown argument "colour" for history (known: benchmark suite '
         'other hosts tags limit by metric)'),
        ("history", '{"benchmark": "grows", "limit": 1001}', "1",
         '"limit" must be an integer from 1 to 1000'),
        ("history", '{"benchmark": "grows", "tags": {"commit": 1}}', "1",
         'tag "commit" must be a string'),
        ("history", '{"benchmark": "grows", "hosts": "alpha"}', "1",
         '"hosts" must be an array of at most 256 host names'),
        ("history", '{"benchmark": "grows", "other": 3}', "1",
         '"suite" and "other" must be strings'),
        ("regressions", '{"jobs": 1, "since_us": 5}', "1",
         'give "jobs" or "since_us", not both'),
        ("regressions", '{"since_us": 0}', "1",
         '"since_us" must be an integer from 1 to 31622400000000'),
        ("regressions", '{"jobs": 1001}', "1",
         '"jobs" must be an integer from 1 to 1000'),
        ("regressions", '{"tags": []}', "1",
         '"tags" must be an object of at most 256 string values'),
        ("report", '{"job": "x", "latest": true}', "1",
         'give "job" or "latest", not both'),
        ("report", '{"latest": "yes"}', "1",
         '"job" must be a string and "latest" true or false'),
        ("report", '{"run": "x"}', "1",
         'unknown argument "run" for report (known: job latest)'),
    ]
    got = tj.requests(w, [(c, a) for c, a, _, _ in cases])
    for (c, a, st, msg), (gst, gmsg) in zip(cases, got):
        ok(gst == st and gmsg == msg, "%s %s: status %s %s (got %s %s)" %
           (c, a, st, msg, gst, gmsg))
    got = tj.requests(w, [("history", '{"benchmark": "grows", "limit": 2}')])
    body = json.loads(got[0][1]) if got[0][0] == "0" else {}
    ok(len(pair(body, "old")["rows"]) == 2 and body.get("limit") == 2,
       "a raw history request with limit 2: two rows")


def report_checks(w, jobs, errors):
    r = w.parity("report", "--latest")
    md = r.stdout
    ok(r.returncode == 0 and md.startswith("# Parity report: job " +
                                           jobs["esc"]),
       "report --latest is Markdown of the newest job (%d %s)" %
       (r.returncode, r.stderr.strip()))
    r = w.parity("report")
    ok(r.returncode == 0 and r.stdout == md,
       "report without JOB is the newest job's, as verdicts does (%d %s)" %
       (r.returncode, r.stderr.strip()))
    ok("&lt;script&gt;alert(1)&lt;/script&gt;" in md and ESC_NAME not in md
       and "x&amp;y" in md,
       "Markdown escapes the benchmark's and arm's names")
    r = w.parity("report", jobs["c3"])
    md = r.stdout
    ok(r.returncode == 0 and "suite hist" in md and "commit=c3" in md,
       "report of c3: suite and tags")
    ok(all(re.search(r"^\| %s \|" % h, md, re.M) for h in HOSTS) and
       md.count("loss ") >= 2 and "loss on all 2 hosts" in md,
       "report of c3: every host's environment and verdict, the summary")
    ok("| arm | n | min | median | max | IQR |" in md and
       re.search(r"^\| alpha \| new \(subject\) \| 7 \|", md, re.M) and
       "a\\|b" in md, "report of c3: arm summaries per host (n 7), pipes "
       "escaped")
    path = os.path.join(w.root, "esc.html")
    r = w.parity("report", jobs["esc"], "--html", "--out", path)
    html = open(path).read() if os.path.exists(path) else ""
    ok(r.returncode == 0 and r.stdout == "" and html.startswith(
        "<!DOCTYPE html>") and html.rstrip().endswith("</html>"),
       "--html --out writes one HTML file")
    ok("&lt;script&gt;alert(1)&lt;/script&gt;" in html and
       "<script" not in html and "x&amp;y" in html,
       "HTML shows the script name verbatim (escaped)")
    ok("<style>" in html and not re.search(r"(src|href)\s*=|https?:|@import",
                                           html),
       "HTML has inline CSS and no external resource")
    ok(all(">%s<" % h in html for h in HOSTS), "HTML names every host")
    r = w.parity("report", jobs["c3"], "--html")
    ok(r.returncode == 0 and r.stdout.count("loss ") >= 2,
       "HTML of c3 has both hosts' losses")
    errors += [
        (("report", "0123456789ab"), 1,
         'parity report: no job "0123456789ab" (parity jobs lists them)'),
        (("report", "--latest", jobs["c3"]), 2,
         "parity report: give JOB or --latest, not both"),
        (("report", "--latest", "--html", "--markdown"), 2,
         "parity report: give one of --markdown, --html"),
        (("report", "--latest", "--out", "/nonexistent/dir/r.md"), 1,
         "parity report: --out /nonexistent/dir/r.md: No such file or "
         "directory"),
    ]


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR)
    {"fleet": case_fleet}[sys.argv[1]]()
    tj.pf.finish()


if __name__ == "__main__":
    main()
