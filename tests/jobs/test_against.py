#!/usr/bin/env python3
"""test_against.py BUILD_DIR -- one job that interleaves revisions (TAP).

docs/suites.md "Against", docs/ci.md "Which mode". Real processes, as
tests/jobs/test_jobs.py (whose World fixture this imports): a
parity-collector with its private PostgreSQL at the default --parity
0.04, two parity-agent daemons (alpha, beta) on one machine, the
`parity` client, 127.0.0.1 only.

Suite "spin" says `revision: commit`. Its subject arm takes 45 ms
(parity-testprog sleep), 10 % longer from commit c37 on; the other arm
takes the c00 time. (A sleep, not CPU work: on this 2-vCPU VM 40 ms of
loop ran in two modes 27 and 50 ms apart, the machine's and not the
rule's business; tests/bench/gate-bench measures both.) `parity run spin
--wait --var commit=c50 --against commit=c00 --fail-on loss` runs
work@c50, fixed and work@c00 in the same rounds on each host and gates
on work@c50 against work@c00: exit 1 in each of 5 tries; c01 against
c00 (the same work) exits 0 in each of 5 tries. What a user reads is
checked: the gate's rows and result line, the verdicts answer's
`against`, no series or change point of the instance, the runs' arms.
Then the errors, each before anything runs but the last: --against of
another variable, of a suite with no revision variable, the job's own
value, twice, beside --baseline, malformed; and an instance whose setup
fails (no build of c99), which fails that host's run naming the arm.
"""
import json
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail)

ok, diag = tj.ok, tj.diag
TESTPROG, = tj.pf.built("tests/helpers/parity-testprog")
HOSTS = ("alpha", "beta")
TRIES = 5
# 45 ms; c37 on takes 10 % longer.
BASE_US, SLOW_US = 45000, 49500
# The suite of this test and of tests/bench/gate_bench.py: OP is
# parity-testprog's sleep (microseconds) or loop (iterations), BASE its
# argument, SLOW the one from c37 on.
SUITE = """suite: %(name)s
revision: commit
variables:
  commit: c00
  testprog: %(prog)s
defaults:
  runs: 10
  warmup: 1
benchmarks:
  - name: %(bench)s
    arms:
      - name: %(subject)s
        subject: true
        shell: 'case "$PARITY_VAR_COMMIT" in c3[7-9]|c[4-6]?) n=%(slow)d ;;
          *) n=%(base)d ;; esac; exec "$PARITY_VAR_TESTPROG" %(op)s $n'
        setup: 'test "${commit}" != c99 || { echo "no build of c99" >&2;
          exit 3; }'
      - name: %(other)s
        command: ["${testprog}", %(op)s, "%(base)d"]
"""
SPIN = SUITE % {"name": "spin", "bench": "work", "subject": "work",
                "other": "fixed", "prog": TESTPROG, "op": "sleep",
                "slow": SLOW_US, "base": BASE_US}
PLAIN = """suite: plain
variables:
  commit: c00
benchmarks:
  - name: quick
    arms:
      - name: a
        command: [true, "${commit}"]
      - name: b
        command: ["true"]
"""


def gate(w, head, base):
    return w.parity("run", "spin", "--wait", "--var", "commit=" + head,
                    "--against", "commit=" + base, "--fail-on", "loss",
                    timeout=240)


def check_gate(w):
    slow = [gate(w, "c50", "c00") for _ in range(TRIES)]
    codes = [(r.returncode, "parity run: the gate failed: 2 of 2 cases" in
              r.stderr) for r in slow]
    ok(codes == [(1, True)] * TRIES, "c50 against c00, --fail-on loss: the "
       "gate fails in each of %d tries (%s)" % (TRIES, codes)) or \
        diag(slow[-1].stdout[-1500:] + slow[-1].stderr[-500:])
    last = slow[-1].stdout
    rows = [x.split() for x in last.splitlines()
            if x.rstrip().endswith(" FAIL")]
    ok(sorted(x[1] for x in rows) == list(HOSTS) and
       all(x[0] == "work" and x[2] == "loss" for x in rows),
       "a FAIL row per host: work, loss (%s)" % rows)
    ok("gate failed: 2 of 2 cases fail (fail on loss; against "
       "commit=c00): 0 win, 0 parity, 2 loss, 0 undecided" in last,
       "the result line counts the two hosts' cases alone") \
        or diag(last[-600:])
    same = [gate(w, "c01", "c00") for _ in range(TRIES)]
    codes = [r.returncode for r in same]
    ok(codes == [0] * TRIES, "c01 against c00 (the same work): exit 0 in "
       "each of %d tries (%s)" % (TRIES, codes)) or \
        diag(same[-1].stdout[-1500:] + same[-1].stderr[-500:])
    return slow[-1]


def check_stored(w, last):
    job = [x for x in last.stderr.splitlines() if x.startswith("job ")]
    job = job[0].split()[1].rstrip(":") if job else "?"
    v = w.pjson("verdicts", job, "--json") or {}
    cmps = {c["other"]: c for c in v.get("comparisons", [])}
    ok(sorted(cmps) == ["fixed", "work@c00"] and
       cmps["work@c00"].get("against") == {"name": "commit", "value": "c00",
                                           "subject_value": "c50"} and
       "against" not in cmps["fixed"] and
       v.get("against") == [{"name": "commit", "value": "c00"}] and
       v.get("vars") == {"commit": "c50"},
       "verdicts: work vs fixed and vs work@c00, which records both "
       "revisions (%s)" % {k: c.get("against") for k, c in cmps.items()})
    hosts = cmps.get("work@c00", {}).get("hosts", [])
    ok(sorted(h["host"] for h in hosts) == list(HOSTS) and
       all(h.get("verdict", {}).get("outcome") == "loss" for h in hosts),
       "each host's verdict of it is a loss")
    arms = w.psql("SELECT string_agg(a.name || ':' || coalesce(a.instance, "
                  "'-'), ',' ORDER BY a.idx) FROM arms a JOIN runs r ON "
                  "r.id = a.run WHERE r.job_id = '%s' GROUP BY r.id LIMIT 1"
                  % job)
    ok(arms == "work:-,fixed:-,work@c00:c00", "the run's arms: the "
       "instance last, with its revision (%s)" % arms)
    series = w.psql("SELECT string_agg(DISTINCT other, ',') FROM series s "
                    "JOIN benchmarks b ON b.id = s.benchmark_id WHERE "
                    "b.suite = 'spin'")
    ok(series == "fixed", "the instance's verdict makes no series (%s)"
       % series)
    h = w.pjson("history", "work", "--json") or {}
    pairs = sorted(p.get("other") for p in h.get("pairs", []))
    ok(pairs == ["fixed"], "nor a pair of history: work vs fixed alone (%s)"
       % pairs)
    # Detection has looked at every stored run of the job once the
    # windows it keeps end at the newest run (it trails the writer).
    newest = w.psql("SELECT max(r.id) FROM runs r JOIN benchmarks b ON "
                    "b.id = r.benchmark_id WHERE b.suite = 'spin'")
    end = tj.time.time() + 30
    while tj.time.time() < end and w.psql(
            "SELECT count(*) FROM detect_windows WHERE newest_run = %s"
            % newest) == "0":
        tj.time.sleep(0.25)
    kept = w.psql("SELECT string_agg(DISTINCT other, ',') FROM "
                  "detect_windows")
    cps = w.psql("SELECT count(*) FROM change_points WHERE other LIKE "
                 "'%@%'")
    ok(kept == "fixed" and cps == "0", "detection watched work vs fixed "
       "alone: no window nor change point of the instance (%s, %s)"
       % (kept, cps))


def check_errors(w):
    for args, code, want in [
        (("spin", "--var", "commit=c50", "--against", "size=2"), 1,
         'parity run: host "alpha": --against size: --against takes its '
         'suite "spin"\'s revision variable, commit'),
        (("plain", "--against", "commit=c01"), 1,
         'parity run: host "alpha": --against commit: its suite "plain" '
         'names no revision variable (add "revision: commit" to compare '
         'its values in one job; docs/suites.md "Revision")'),
        (("spin", "--var", "commit=c50", "--against", "commit=c50"), 1,
         'parity run: "against"[0]: commit=c50 is the job\'s own value '
         '(give another)'),
        (("spin", "--against", "commit=c01", "--against", "commit=c01"), 1,
         'parity run: "against"[1]: commit=c01 given twice'),
        (("spin", "--wait", "--against", "commit=c01", "--baseline",
          "branch=main"), 2,
         'parity run: --against and --baseline are two ways to judge the '
         'job\'s subject: give one (docs/ci.md "Which mode")'),
        (("spin", "--against", "c01"), 2,
         'parity run: --against "c01": want NAME=VALUE, NAME a variable '
         'name (the suite\'s revision variable)'),
    ]:
        r = w.parity("run", *args)
        ok(r.returncode == code and r.stderr.strip() == want,
           "run %s: exit %d, %s (got %d: %s)" % (" ".join(args), code, want,
                                                 r.returncode,
                                                 r.stderr.strip()))
    # What another client may send: the run request's "against" itself.
    bad = [
        ('{"suite": "spin", "against": {"commit": "c00"}}',
         '"against" must be an array of at most 14 {"name", "value"} '
         'objects'),
        ('{"suite": "spin", "against": [%s]}' % ", ".join(
            '{"name": "commit", "value": "x%d"}' % i for i in range(15)),
         '"against" must be an array of at most 14 {"name", "value"} '
         'objects'),
        ('{"suite": "spin", "against": [{"name": "commit"}]}',
         '"against"[0] must be {"name": a variable name, "value": a string '
         'of at most 1024 bytes}'),
        ('{"suite": "spin", "against": [{"name": "1x", "value": "a"}]}',
         '"against"[0] must be {"name": a variable name, "value": a string '
         'of at most 1024 bytes}'),
        ('{"suite": "spin", "against": [{"name": "commit", "value": "a", '
         '"x": 1}]}', '"against"[0] must be {"name": a variable name, '
         '"value": a string of at most 1024 bytes}'),
        ('{"suite": "spin", "against": [{"name": "commit", "value": "a"}, '
         '{"name": "size", "value": "b"}]}', '"against"[1]: values of one '
         'variable only, the suite\'s revision ("commit", then "size")'),
    ]
    ans = tj.requests(w, [("run", a) for a, _ in bad])
    ok(ans == [("1", want) for _, want in bad],
       "a run request's malformed \"against\": status 1, each message "
       "(%s)" % ans)
    jobs = (w.pjson("jobs", "--json") or {}).get("jobs", [])
    ok(len(jobs) == 2 * TRIES, "none of them made a job (%d jobs)"
       % len(jobs))
    r = w.parity("run", "spin", "--wait", "--var", "commit=c50",
                 "--against", "commit=c99", "--runs", "2", timeout=120)
    ok(r.returncode == 1 and "2 of 2 hosts did not finish job" in r.stderr,
       "an instance whose setup fails fails each host's run (%d)"
       % r.returncode) or diag(r.stderr[-600:])
    job = [x for x in r.stderr.splitlines() if x.startswith("job ")]
    job = job[0].split()[1].rstrip(":") if job else "?"
    reasons = w.psql("SELECT string_agg(DISTINCT reason, '|') FROM "
                     "job_hosts jh JOIN jobs j ON j.id = jh.job WHERE "
                     "j.job_uuid = '%s'" % job) or ""
    ok('setup of arm "work@c99": exited with status 3, expected 0'
       in reasons, "... saying which instance and why (%s)" % reasons)


def case_against():
    w = tj.World()
    try:
        w.write_suites({"spin.yaml": SPIN, "plain.yaml": PLAIN})
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return
        last = check_gate(w)
        check_stored(w, last)
        check_errors(w)
    finally:
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST, TESTPROG)
    case_against()
    tj.pf.finish()


if __name__ == "__main__":
    main()
