#!/usr/bin/env python3
"""test_confirm.py BUILD_DIR -- confirming a change-point event (TAP).

docs/regressions.md "Confirm": `parity regressions confirm ID` measures
the revision before an event's step and the one after it interleaved in
one job on the event's hosts; the collector's `--confirm on` does it for
every new fleet event before its webhook notice goes, and the notice
says the answer. Real processes, as tests/jobs (whose World fixture this
imports): a parity-collector (--confirm on, --notify-url to an HTTP
receiver in this process) with its private PostgreSQL, two parity-agent
daemons (alpha, beta), the `parity` client, 127.0.0.1 only. The
collector's default --parity (4 %).

  work   `revision: commit`; its subject sleeps 60 ms, 90 ms from commit
         c37 on; the other arm 60 ms. History jobs --var commit=c30 ..
         c44: one event at c37 on both hosts; its automatic confirm runs
         c37 against c36 and says confirmed, and only then is its notice
         sent, carrying that answer. `regressions confirm ID --wait`
         again: exit 1, both hosts confirmed (loss), in one job.
         `regressions`, `history`, the site and the Atom feed show it.
  drift  `revision: commit`; its subject sleeps for what a file on the
         agents' machine says, the same for every commit: 60 ms, then 90
         ms from the job of c37 on (the machine changed, not the code).
         The same 15 jobs find an event at c37, but its confirm runs c37
         and c36 side by side under the same machine: not reproduced
         (parity on both hosts); the notice says so; `confirm --wait`
         exits 0.
  plain  no `revision:`; jobs tagged commit=p00 .. p09, a step at p05:
         its event cannot be confirmed (no revision to measure again), and
         its notice goes at once, saying why; `confirm` is refused with
         that reason (exit 4).
Bad input: an unknown id, a malformed one, --runs out of range, an
unknown confirm id, each with its message.
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
from parity_hooks import Receiver  # noqa: E402

ok, diag = tj.ok, tj.diag
HOSTS = ("alpha", "beta")
COMMITS = ["c%02d" % i for i in range(30, 45)]
WORK = """suite: work
revision: commit
variables:
  commit: c00
defaults:
  runs: 5
  warmup: 1
benchmarks:
  - name: work
    arms:
      - name: subject
        subject: true
        shell: 'case "$PARITY_VAR_COMMIT" in c3[7-9]|c4?) sleep 0.09 ;;
          *) sleep 0.06 ;; esac'
      - name: other
        command: [sleep, "0.06"]
"""
DRIFT = """suite: drift
revision: commit
variables:
  commit: c00
defaults:
  runs: 5
  warmup: 1
benchmarks:
  - name: drift
    arms:
      - name: subject
        subject: true
        shell: ': ${commit}; sleep "$(cat %s)"'
      - name: other
        command: [sleep, "0.06"]
"""
PLAIN = """suite: plain
defaults:
  runs: 5
  warmup: 1
benchmarks:
  - name: plain
    arms:
      - name: subject
        subject: true
        shell: 'sleep "$(cat %s)"'
      - name: other
        command: [sleep, "0.03"]
"""


def run_job(w, *args):
    r = w.parity("run", *args, "--wait", timeout=180)
    return r if r.returncode == 0 else diag(r.stderr[-300:])


def event_of(w, suite, timeout=120):
    """The open event of suite once it has both hosts and stayed the same
    for 3 s (detection trails the writer)."""
    last, since, e = None, time.time(), None
    end = time.time() + timeout
    while time.time() < end:
        body = w.pjson("regressions", "--json") or {}
        evs = [x for x in body.get("change_points", {}).get("events", {})
               .get("open", []) if x["suite"] == suite]
        cur = json.dumps(evs, sort_keys=True)
        if cur != last:
            last, since = cur, time.time()
        if (len(evs) == 1 and evs[0]["hosts_with_step"] == 2 and
                time.time() - since > 3):
            return evs[0]
        time.sleep(0.5)
    diag("events of %s: %s" % (suite, last))
    return e


def notices_of(rx, suite, timeout):
    """The event notices of suite rx got, once it has one and 2 s more
    passed (a second one would be a bug: it is given time to come)."""
    def of_suite():
        return [b for b in (json.loads(t) for _, t in rx.notices())
                if b.get("parity", {}).get("kind") == "event" and
                b["parity"]["event"].get("suite") == suite]
    end = time.time() + timeout
    while time.time() < end:
        if of_suite():
            time.sleep(2)
            return of_suite()
        time.sleep(0.5)
    return of_suite()


def check_work(w, rx):
    good = sum(bool(run_job(w, "work", "--var", "commit=" + c))
               for c in COMMITS)
    ok(good == len(COMMITS), "15 history jobs, --var commit=c30 .. c44 "
       "(%d ran)" % good)
    e = event_of(w, "work")
    if not ok(e and e["after"]["tags"].get("commit") == "c37" and
              e["before"]["tags"].get("commit") == "c36" and e["regression"],
              "one event, between c36 and c37 on 2 of 2 hosts, a regression"):
        return
    got = notices_of(rx, "work", 180)
    ok(len(got) == 1, "one notice for the event (%d)" % len(got))
    n = got[0] if got else {}
    k = n.get("parity", {}).get("confirm", {})
    ok(k.get("state") == "confirmed" and k.get("confirmed") == 2 and
       k.get("measured") == 2 and k.get("before") == "c36" and
       k.get("after") == "c37", "--confirm: the notice carries the "
       "automatic confirm, confirmed on 2 of 2 hosts, c37 against c36 (%s)"
       % {x: k.get(x) for x in ("state", "confirmed", "measured")})
    ok(n.get("text", "").endswith("; confirm %s confirmed: 2 of 2 hosts see "
                                  "the step again, c37 against c36 in one "
                                  "job" % k.get("id")),
       "its text says so at the end (%s)" % n.get("text", "")[-120:])
    ok(all(h["state"] == "confirmed" and h["outcome"] == "loss" and
           h["ratio"] > 1.3 for h in k.get("hosts", [])) and
       sorted(h["host"] for h in k.get("hosts", [])) == list(HOSTS),
       "each host's verdict of c37 against c36 is a loss (%s)" %
       [(h["host"], h.get("outcome"), h.get("ratio"))
        for h in k.get("hosts", [])])
    row = w.psql("SELECT k.state, k.notify, j.tags->>'confirm' = k.id::text, "
                 "j.against::text, k.ended_at_us <= n.created_at_us FROM "
                 "confirms k JOIN jobs j ON j.job_uuid = k.job_uuid JOIN "
                 "notices n ON n.kind = 'event' AND n.ref = k.event::text "
                 "WHERE k.suite = 'work'")
    ok(row == 'confirmed|t|t|[{"name": "commit", "value": "c36"}]|t',
       "one job, --against commit=c36, tagged confirm=ID; the notice "
       "stored after the confirm ended (%s)" % row)

    r = w.parity("regressions", "confirm", str(e["id"]), "--wait",
                 timeout=180)
    out = r.stdout.splitlines()
    ok(r.returncode == 1 and len(out) == 5 and
       re.match(r"confirm \d+ of event #%d \(work/work\), c37 against c36 "
                r"in job [0-9a-f]{12}:$" % e["id"], out[0]) and
       re.match(r"^host +state +verdict +ratio +tolerance +why$", out[1]) and
       all(re.match(r"^%s +confirmed +loss +x1\.[3-6]\d\d +\d+\.\d %% *$" % h,
                    x) for h, x in zip(HOSTS, out[2:4])) and
       re.match(r"^confirm \d+ confirmed: 2 of 2 hosts see the step again, "
                r"c37 against c36 in one job$", out[4]),
       "regressions confirm ID --wait: exit 1, both hosts confirmed (%d)"
       % r.returncode) or diag(r.stdout + r.stderr)
    ok(re.match(r"^confirm \d+ of event #%d asked: work/work, c37 against "
                r"c36 on alpha, beta\nparity regressions confirm: job "
                r"[0-9a-f]{12}\n$" % e["id"], r.stderr),
       "its stderr: what was asked, then the job") or diag(r.stderr)
    kid = re.match(r"confirm (\d+)", r.stdout)
    told = []
    for _ in range(20):
        told = [b for b in (json.loads(t) for _, t in rx.notices())
                if b.get("parity", {}).get("kind") == "confirm"]
        if told:
            break
        time.sleep(0.5)
    ok(kid and [b["text"] for b in told] == [
        "Parity: event #%d of work/work: confirm %s confirmed: 2 of 2 hosts "
        "see the step again, c37 against c36 in one job" %
        (e["id"], kid.group(1))] and told[0]["parity"]["event"] == e["id"],
       "a confirm asked by a client is told when it ends, kind confirm (%s)"
       % [b.get("text") for b in told])
    r = w.parity("regressions")
    ok(re.search(r"slower on 2 of 2 hosts between c36 and c37.*\n    confirm "
                 r"\d+ confirmed: 2 of 2 hosts see the step again, c37 "
                 r"against c36 in one job\n", r.stdout),
       "parity regressions shows the event's confirm under it") \
        or diag(r.stdout[-900:])
    r = w.parity("history", "work")
    ok(re.search(r"\(regression\) at commit=c37 \(first run after the "
                 r"change\)\n    confirm \d+ confirmed: 2 of 2 hosts see the "
                 r"step again", r.stdout) and r.stdout.count("    confirm ")
       == 2, "parity history shows it under each host's change point") \
        or diag(r.stdout[-900:])
    site = os.path.join(w.root, "site")
    r = w.parity("report", "--site", site, timeout=120)
    atom = index = ""
    if r.returncode == 0:
        with open(os.path.join(site, "regressions.xml")) as f:
            atom = f.read()
        with open(os.path.join(site, "index.html")) as f:
            index = f.read()
    ok(re.search(r"<title type=\"text\">slower: work \(subject vs other\) on "
                 r"2 of 2 hosts, [^<]* \(confirmed\)</title>", atom) and
       "; confirm " in atom, "the Atom entry's title says confirmed") \
        or diag(r.stderr + atom[:1500])
    ok(re.search(r"; confirm \d+ confirmed: 2 of 2 hosts see the step again, "
                 r"c37 against c36 in one job", index),
       "the site's events table says it") or diag(index[:300])


def check_drift(w, rx, knob):
    good = 0
    for c in COMMITS:
        with open(knob, "w") as f:
            f.write("0.09\n" if c >= "c37" else "0.06\n")
        good += bool(run_job(w, "drift", "--var", "commit=" + c))
    ok(good == len(COMMITS), "15 drift jobs, the machine slower from c37's "
       "on (%d ran)" % good)
    e = event_of(w, "drift")
    if not ok(e and e["after"]["tags"].get("commit") == "c37",
              "an event at c37 on 2 of 2 hosts: a step of the machine"):
        return
    got = notices_of(rx, "drift", 180)
    k = got[0].get("parity", {}).get("confirm", {}) if got else {}
    ok(len(got) == 1 and k.get("state") == "not reproduced" and
       k.get("confirmed") == 0 and k.get("measured") == 2 and
       got[0]["text"].endswith("; confirm %s not reproduced: 0 of 2 hosts "
                               "see the step again, c37 against c36 in one "
                               "job" % k.get("id")),
       "--confirm: one notice, not reproduced, 0 of 2 hosts (%s)" %
       [(x.get("text", "")[-100:]) for x in got])
    ok(all(h["state"] == "not reproduced" and h["outcome"] == "parity"
           for h in k.get("hosts", [])) and len(k.get("hosts", [])) == 2,
       "each host: parity of c37 against c36 (%s)" %
       [(h["host"], h.get("outcome"), h.get("ratio"))
        for h in k.get("hosts", [])])
    r = w.parity("regressions", "confirm", str(e["id"]), "--wait", "--json",
                 timeout=180)
    body = {}
    try:
        body = json.loads(r.stdout)
    except ValueError:
        pass
    ok(r.returncode == 0 and body.get("state") == "not reproduced" and
       body.get("result", {}).get("measured") == 2,
       "regressions confirm ID --wait --json: exit 0, not reproduced (%d)"
       % r.returncode) or diag(r.stdout[-400:] + r.stderr)


def check_plain(w, rx, knob):
    good = 0
    for i in range(10):
        with open(knob, "w") as f:
            f.write("0.05\n" if i >= 5 else "0.03\n")
        good += bool(run_job(w, "plain", "--tag", "commit=p%02d" % i))
    ok(good == 10, "10 plain jobs tagged commit=p00 .. p09 (%d ran)" % good)
    e = event_of(w, "plain")
    if not ok(e, "an event of plain"):
        return
    why = ('event %d: suite "plain" names no revision variable, so the runs '
           'either side of its step have no revision to measure again '
           '(docs/suites.md "Revision")' % e["id"])
    got = notices_of(rx, "plain", 60)
    ok(len(got) == 1 and got[0]["text"].endswith("; not confirmed: " + why)
       and got[0]["parity"]["confirm"] == {"state": "not possible",
                                           "reason": why},
       "--confirm: its notice goes at once, saying why it is not confirmed "
       "(%s)" % [x.get("text", "")[-160:] for x in got])
    r = w.parity("regressions", "confirm", str(e["id"]))
    ok(r.returncode == 4 and r.stderr == "parity regressions confirm: %s\n"
       % why, "regressions confirm: refused, exit 4, the reason (%d %s)"
       % (r.returncode, r.stderr.strip()))


def check_errors(w):
    cases = [
        (("999999",), 4, "parity regressions confirm: no change point 999999 "
                         "(parity regressions lists them)\n"),
        (("abc",), 2, 'parity regressions confirm: "abc" is not an event '
                      'id\n'),
        ((), 2, "parity regressions confirm: give one event id (parity "
                "regressions lists them)\n"),
        (("1", "--runs", "1"), 2, 'parity regressions confirm: --runs "1": '
                                  'want a whole number from 2 to 10000\n'),
        (("1", "--bogus"), 2, "parity regressions confirm: unexpected option "
                              "--bogus (parity regressions --help)\n"),
    ]
    for args, code, err in cases:
        r = w.parity("regressions", "confirm", *args)
        ok(r.returncode == code and r.stderr == err,
           "confirm %s: exit %d, %s" % (" ".join(args), code, err.strip())) \
            or diag("%d %r" % (r.returncode, r.stderr))
    got = tj.requests(w, [("confirm_status", '{"confirm": 424242}'),
                          ("confirm_status", "{}"),
                          ("confirm", '{"id": 1, "runs": 1}'),
                          ("confirm", '{"id": 1, "hosts": []}')])
    want = [("4", "no confirm 424242"),
            ("1", '"confirm" is required: a confirm\'s id'),
            ("1", '"runs" must be an integer from 2 to 10000'),
            ("1", 'unknown argument "hosts" for confirm (known: id runs)')]
    for (st, text), (wst, wtext) in zip(got, want):
        ok(st == wst and wtext in text, "request: %s %s" % (wst, wtext)) \
            or diag("%s %s" % (st, text))


def case_confirm():
    w = tj.World()
    rx = Receiver("ok")
    rx.start()
    knob = os.path.join(w.root, "drift-seconds")
    pknob = os.path.join(w.root, "plain-seconds")
    for path, v in ((knob, "0.06\n"), (pknob, "0.03\n")):
        with open(path, "w") as f:
            f.write(v)
    try:
        w.write_suites({"work.yaml": WORK, "drift.yaml": DRIFT % knob,
                        "plain.yaml": PLAIN % pknob})
        orig = w.collector_cmd

        def cmd(bind, hb, *extra):
            return orig(bind, hb, "--confirm", "on", "--notify-url", rx.url,
                        *extra)
        w.collector_cmd = cmd
        if not ok(w.start_fleet(HOSTS), "alpha and beta are online"):
            return
        check_errors(w)
        check_work(w, rx)
        check_drift(w, rx, knob)
        check_plain(w, rx, pknob)
    finally:
        rx.stop()
        w.close(keep=tj.tap.n_failed > 0)


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST)
    case_confirm()
    tj.pf.finish()


if __name__ == "__main__":
    main()
