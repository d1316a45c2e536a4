#!/usr/bin/env python3
"""test_revision.py BUILD_DIR -- the revision variable (TAP).

docs/suites.md "Revision": the variable that picks the version under
test is no part of a series' key. Real processes, as tests/jobs (whose
World fixture this imports): a parity-collector with its private
PostgreSQL, two parity-agent daemons (alpha, beta), the `parity` client,
127.0.0.1 only.

  work   suite "work" says `revision: commit`. Its subject arm sleeps
         60 ms, 90 ms (50 % slower) from commit c37 on; the other arm
         sleeps 60 ms. 19 jobs, `--var commit=c28` .. `c46` and nothing
         else, as docs/ci.md says to measure a build: the runs are one
         series per host, so the collector finds one change point per
         host, between c36 and c37, a regression on 2 of 2 hosts, and
         `parity regressions` and `history` say where it is by commit.
  plain  suite "plain" names no revision variable: its second job, with
         another --var commit, is warned about once, naming commit; the
         third is not; "work" never is.
"""
import json
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail)

ok, diag = tj.ok, tj.diag
HOSTS = ("alpha", "beta")
COMMITS = ["c%02d" % i for i in range(28, 47)]
WORK = """suite: work
revision: commit
variables:
  commit: c00
  size: "1"
defaults:
  runs: 5
  warmup: 1
benchmarks:
  - name: work
    arms:
      - name: subject
        subject: true
        shell: 'case "$PARITY_VAR_COMMIT" in c3[7-9]|c4?) sleep 0.09 ;;
          *) sleep 0.06 ;; esac; : ${size}'
      - name: other
        command: [sleep, "0.06"]
"""
PLAIN = """suite: plain
variables:
  commit: c00
benchmarks:
  - name: quick
    runs: 2
    warmup: 0
    arms:
      - name: a
        command: [true, "${commit}"]
      - name: b
        command: ["true"]
"""
ADVICE = ('parity run: warning: suite "plain" names no revision variable '
          'and its jobs differ only in commit (b here, a before): each '
          'value of commit is a series of its own, which history and '
          'regressions never compare; add "revision: commit" to the suite '
          '(docs/suites.md "Revision")')


def run_job(w, suite, *extra):
    r = w.parity("run", suite, "--wait", *extra, timeout=120)
    return r if r.returncode == 0 else diag(r.stderr[-300:])


def wait_regressions(w, timeout=90):
    """The open change points once each host has a regression and the
    list stayed the same for 3 s (detection trails the writer on its own
    thread, at a low priority)."""
    body, last, since = {}, None, tj.time.time()
    end = tj.time.time() + timeout
    while tj.time.time() < end:
        body = w.pjson("regressions", "--json") or {}
        cps = body.get("change_points", {}).get("open", [])
        cur = json.dumps(cps, sort_keys=True)
        if cur != last:
            last, since = cur, tj.time.time()
        seen = {c["host"] for c in cps if c["regression"]}
        if all(h in seen for h in HOSTS) and tj.time.time() - since > 3:
            break
        tj.time.sleep(0.25)
    return body


def check_work(w):
    good = sum(bool(run_job(w, "work", "--var", "commit=" + c))
               for c in COMMITS)
    ok(good == len(COMMITS), "19 jobs, --var commit=c28 .. c46 (%d ran)"
       % good)
    ok(w.psql("SELECT string_agg(DISTINCT revision, ',') FROM host_suites "
              "WHERE name = 'work'") == "commit",
       "each host's Hello says work's revision variable is commit")
    rows = w.psql("SELECT count(DISTINCT (host_id, vars)), "
                  "count(DISTINCT revision), bool_and(vars = '{}' AND "
                  "tags->>'commit' = revision) "
                  "FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id "
                  "WHERE b.suite = 'work'")
    ok(rows == "2|19|t", "the runs are one series a host: commit is each "
       "run's revision and tag, not a variable of its key (%s)" % rows)

    body = wait_regressions(w)
    cps = body.get("change_points", {}).get("open", [])
    ok(len(cps) == 2 and sorted(c["host"] for c in cps) == list(HOSTS),
       "one change point per host (%s)" %
       [(c["host"], c["metric"], c["magnitude"]) for c in cps])
    ok(all(c["regression"] and c["outcome"] == "loss" and
           c["before"]["tags"].get("commit") == "c36" and
           c["after"]["tags"].get("commit") == "c37" and
           c["vars"] == {} and c["hosts_with_step"] == 2 and
           c["hosts_total"] == 2 for c in cps) and cps,
       "each a regression between c36 and c37 on 2 of 2 hosts (%s)" %
       [(c["before"]["tags"], c["after"]["tags"], c["vars"])
        for c in cps])
    r = w.parity("regressions")
    ok(r.returncode == 1 and r.stdout.startswith("events (1):\n  #") and
       "slower on 2 of 2 hosts between c36 and c37" in r.stdout,
       "parity regressions: exit 1, one event between c36 and c37 (%d)"
       % r.returncode) or diag(r.stdout + r.stderr)
    r = w.parity("history", "work")
    ok(r.returncode == 0 and "commit=c37" in r.stdout and
       "(regression) at commit=c37 (first run after the change)" in
       r.stdout, "history work: the rows by commit, the change at c37") \
        or diag(r.stdout[-800:])


def check_plain(w):
    first = run_job(w, "plain", "--var", "commit=a")
    second = run_job(w, "plain", "--var", "commit=b")
    third = run_job(w, "plain", "--var", "commit=c")
    ok(first and "warning" not in first.stderr,
       "plain's first job: no advice") or diag(first and first.stderr)
    got = [x for x in (second.stderr if second else "").splitlines()
           if "warning" in x]
    ok(got == [ADVICE], "its second, another commit: the advice, naming "
       "commit (%s)" % got)
    ok(third and "warning" not in third.stderr,
       "its third: none (once per suite)") or diag(third and third.stderr)
    ok(w.psql("SELECT string_agg(suite || ':' || kind, ',') FROM "
              "suite_warnings") == "plain:revision",
       "the advice went to plain alone, never to work")


def case_revision():
    w = tj.World()
    try:
        w.write_suites({"work.yaml": WORK, "plain.yaml": PLAIN})
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return
        check_work(w)
        check_plain(w)
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST)
    case_revision()
    tj.pf.finish()


if __name__ == "__main__":
    main()
