#!/usr/bin/env python3
"""test_notify.py BUILD_DIR -- webhook notices of fleet events (TAP).

A parity-collector with its private PostgreSQL, the `parity` client and
fleet-feed (tests/history/fleet_feed.c): three agents h1..h3 that send
exact samples, a 10 % step at commit c07 of each benchmark on every
host: one fleet event per benchmark. HTTP receivers on 127.0.0.1, in
this process:

  ok      answers 200 at once;
  slow    answers 200 after 2 s;
  flaky   answers 503 to its first request, then 200;
  refuse  answers 400;
  down    nothing listens on its port until the others have their
          notices; then it answers 200.

Phase 1 (--notify-queue 100), five events: ok gets exactly five notices,
one per event, with the `text` a Slack or Mattermost webhook shows, the
event under "parity", the ids `parity regressions` shows; slow and flaky
get the same five (flaky's first one again after its 503, logged);
refuse is asked once per notice and never again (logged); down gets all
five once it listens (nothing lost while it was down). `parity hosts`
answers at once meanwhile. The database stopped under the notice thread
while an event settles: said once; the event told once it is back.

Phase 2 (the collector again, --notify-queue 2; a receiver that is down
and one that never answers): five more events; the bound is logged for
each; once the down one listens it gets the two its queue held, none of
phase 1's; the notices table has one row per event; the collector stops
at once on SIGTERM with a request unanswered, logging the notices the
hanging receiver never took.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402
from parity_hooks import Receiver  # noqa: E402,F401
from parity_fixtures import wait_until as wait  # noqa: E402

ok, diag = tj.ok, tj.diag
FEED, = tj.pf.built("tests/history/fleet-feed")
HOSTS = ("h1", "h2", "h3")
COMMITS = ["c%02d" % i for i in range(1, 13)]
TEXT = re.compile(r"Parity: slower on 3 of 3 hosts \(h1, h2, h3\): "
                  r"fleet/(\w+) \(new vs old\), ratio x1\.(09|10|11)\d"
                  r"( \(x1\.\d{3} to x1\.\d{3}\))?, loss, between commit=c06 and "
                  r"commit=c07 \(event #(\d+)\)$")


def plan(benches, seed):
    return tj.pf.step_plan(HOSTS, benches, seed, len(COMMITS))


def feed(w, lines, timeout=180):
    return tj.pf.feed_plan(FEED, w, lines, timeout)


def start(w, urls, queue):
    extra = ["--notify-queue", str(queue)]
    for u in urls:
        extra += ["--notify-url", u]
    w.collector = subprocess.Popen(
        w.collector_cmd(w.endpoint, tj.HEARTBEAT_MS, *extra),
        stdout=w.log, stderr=w.log)
    w.wait_tcp(w.collector, w.port)


def log_text(w):
    w.log.flush()
    with open(os.path.join(w.root, "collector.log"), errors="replace") as f:
        return f.read()


def check_ok_notices(w, rx, benches):
    got = rx.notices()
    texts = [json.loads(b).get("text", "") for _, b in got]
    m = [TEXT.match(t) for t in texts]
    ok(len(got) == len(benches) and all(m) and
       sorted(x.group(1) for x in m) == sorted(benches),
       "ok: one notice per event, its text as a chat shows it: %s" %
       texts[:2])
    ok(all(ct == "application/json" for ct, _ in got),
       "ok: Content-Type application/json")
    body = w.pjson("regressions", "--json") or {}
    evs = body.get("change_points", {}).get("events", {}).get("open", [])
    ids = sorted(e["id"] for e in evs)
    sent = sorted(int(x.group(4)) for x in m if x)
    ev = [json.loads(b)["parity"]["event"] for _, b in got]
    ok(sent == ids and sorted(e["id"] for e in ev) == ids and
       all(e["hosts"] == list(HOSTS) and e["hosts_with_step"] == 3 and
           e["regression"] and e["direction"] == "slower" and
           e["after"]["tags"] == {"commit": "c07"} for e in ev),
       "ok: the events' ids are those of parity regressions (%s, %s), "
       "with their hosts, direction and commits" % (sent, ids))
    return ids


def db_away(w, ok_rx):
    """The database stopped under the notice thread while an event
    settles: said once, not once a second; started again, the event is
    told."""
    ok(feed(w, plan(["b6"], 3)), "fleet-feed sends one more event")
    ok(wait(lambda: w.psql("SELECT count(*) FROM change_points cp JOIN "
                           "benchmarks b ON b.id = cp.benchmark_id WHERE "
                           "b.name = 'b6'") == "3", 30),
       "its change points are found (the event settles 10 s from them)")
    pg = os.path.join(w.data, "pg")
    ctl = tj.pf.as_pg_owner([os.path.join(tj.pg_bindir(), "pg_ctl"), "stop",
                             "-D", pg, "-m", "fast", "-w"])
    r = subprocess.run(ctl, capture_output=True, text=True, timeout=60)
    time.sleep(4)
    n = log_text(w).count("event=notify_db ")
    ok(r.returncode == 0 and n == 1, "database stopped: the notice thread "
       "says so once in 4 s (%d lines)" % n)
    ctl[ctl.index("stop")] = "start"
    ctl += ["-l", os.path.join(w.root, "pg-restart.log")]
    if os.getuid() == 0:
        os.chmod(w.root, 0o777)   # the postgres user writes that log
    r = subprocess.run(ctl, capture_output=True, text=True, timeout=60)
    ok(r.returncode == 0 and wait(lambda: len(ok_rx.notices()) == 6, 60),
       "database back: the event is told (%d notices)" %
       len(ok_rx.notices()))


def phase1(w):
    rx = {m: Receiver(m) for m in ("ok", "slow", "flaky", "refuse", "down")}
    for m, r in rx.items():
        if m != "down":
            r.start()
    start(w, [r.url for r in rx.values()], 100)
    benches = ["b%d" % i for i in range(1, 6)]
    t = time.time()
    ok(feed(w, plan(benches, 1)), "fleet-feed sends 3 hosts x 12 commits x "
       "5 benchmarks with a 10 %% step at c07 (%.1f s)" % (time.time() - t))
    ok(wait(lambda: len(rx["ok"].notices()) >= 5, 90),
       "ok gets its notices once the events settle")
    t = time.time()
    r = w.parity("hosts", "--json")
    ok(r.returncode == 0 and time.time() - t < 3,
       "parity hosts answers at once with a receiver slow and one down "
       "(%.2f s)" % (time.time() - t))
    ids = check_ok_notices(w, rx["ok"], benches)
    ok(wait(lambda: len(rx["slow"].notices()) == 5 and
            len(rx["flaky"].notices()) == 5, 60) and
       rx["flaky"].requests == 6,
       "slow and flaky get the five (flaky's first again after its 503: "
       "%d requests)" % rx["flaky"].requests)
    ok(rx["refuse"].requests == 5 and not rx["refuse"].notices(),
       "refuse is asked once per notice, never again (%d)" %
       rx["refuse"].requests)
    rx["down"].start()
    ok(wait(lambda: len(rx["down"].notices()) == 5, 30),
       "down gets all five once it listens: nothing lost while it was "
       "down (%d)" % len(rx["down"].notices()))
    log = log_text(w)
    ok(re.search(r"event=notify_retry url=\"%s\" why=.*queued=" %
                 re.escape(rx["down"].url), log) and
       re.search(r"event=notify_delivered url=\"%s\" after an outage" %
                 re.escape(rx["down"].url), log) and
       log.count("event=notify_refused url=\"%s\" why=\"HTTP 400\"" %
                 rx["refuse"].url) == 5,
       "the log says: retrying the down one, delivered after its outage, "
       "each refusal")
    db_away(w, rx["ok"])
    rc = w.stop(w.collector, wait=20)
    ok(rc == 0, "the collector exits 0 on SIGTERM (%d)" % rc)
    for r in rx.values():
        r.stop()
    return ids


def phase2(w, ids1):
    down, hang = Receiver("down"), Receiver("hang")
    hang.start()
    start(w, [down.url, hang.url], 2)
    told = int(w.psql("SELECT count(*) FROM notices") or 0)
    benches = ["x%d" % i for i in range(1, 6)]
    ok(feed(w, plan(benches, 2)), "fleet-feed sends five more events")
    log = lambda: log_text(w)  # noqa: E731
    ok(wait(lambda: "event=notify_dropped url=\"%s\" queue=2" % down.url
            in log() and "event=notify_dropped url=\"%s\" queue=2" %
            hang.url in log(), 90),
       "the queue's bound (2) is logged for each receiver that did not "
       "take the five")
    # Every one of the five told before down listens: a later event
    # would reach it on top of the two its queue held.
    ok(wait(lambda: w.psql("SELECT count(*) FROM notices") ==
            str(told + 5), 90) and (time.sleep(1) or True),
       "the five events have their notice rows (after %d)" % told)
    down.start()
    ok(wait(lambda: len(down.notices()) == 2, 30) and
       (time.sleep(2) or len(down.notices()) == 2),
       "down gets the two its queue held once it listens (%d)" %
       len(down.notices()))
    texts = [json.loads(b)["text"] for _, b in down.notices()]
    ok(all("fleet/x" in t for t in texts),
       "they are the second collector's events, none of the first's again "
       "(%s)" % [t[:60] for t in texts])
    rows = w.psql("SELECT count(*), count(DISTINCT ref) FROM notices")
    ok(rows == "11|11", "notices: one row per event, eleven (%s)" % rows)
    # hang holds a notice unanswered: the stop does not wait for it.
    t = time.time()
    rc = w.stop(w.collector, wait=20)
    ok(rc == 0 and time.time() - t < 8, "the collector exits 0 on SIGTERM "
       "at once with a receiver that never answers (%d, %.1f s)" %
       (rc, time.time() - t))
    ok("event=notify_undelivered url=\"%s\" notices=2" % hang.url in log(),
       "the notices the hanging receiver never took are logged at the stop")
    down.stop()


def main():
    tj.pf.need(tj.PARITY, tj.COLLECTOR, FEED)
    w = tj.World().allow_hosts(HOSTS)
    try:
        ids = phase1(w)
        phase2(w, ids)
        w.collector = None
    finally:
        w.close(tj.tap.n_failed > 0)
    tj.pf.finish()


if __name__ == "__main__":
    main()
