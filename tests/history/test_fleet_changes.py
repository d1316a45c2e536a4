#!/usr/bin/env python3
"""test_fleet_changes.py BUILD_DIR -- the change-points contract
(docs/regressions.md, "What a change point is") on an exact fleet (TAP).

A parity-collector with its private PostgreSQL, the `parity` client and
fleet-feed (tests/history/fleet_feed.c): four agents h1..h4 that send
exactly the samples they are given, as the independent fleet written
from docs/protocol.md did. 40 commits c01..c40, one run a commit a host,
15 rounds of two arms, 1 % noise a sample (seeded):

  step   the subject arm is 10 % slower from c25 on, on h1..h3; h4 level.
  noise  both arms the same (A/A): no change point anywhere.
  modes  each run's samples in two timing modes 30 % apart, the share of
         the slow one moving from run to run; the fastest runs stay put:
         no change point.
  drift  on h1 the subject arm is 0.5 % slower a commit from c10 on: one
         change point, a trend (where it began, its rate, the total),
         not a row per segment; the other hosts level.

What a user reads is checked exactly: one change point per host h1..h3,
between c24 and c25, loss, x1.10 (with the ratio's and the subject's
magnitude, the other arm's null), on "3 of 4" hosts everywhere; none on
h4; `parity regressions` exits 1 and its table says so; `parity history
step --json` shows the same change points with the same ids; and `parity
changes` on the series as stored finds the same index.
"""
import json
import os
import random
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail)

ok, diag = tj.ok, tj.diag
FEED, = tj.pf.built("tests/history/fleet-feed")
HOSTS = ("h1", "h2", "h3", "h4")
COMMITS = ["c%02d" % i for i in range(1, 41)]
ROUNDS = 15
BASE_US = 10000.0


def modes_samples(rng, slow_share):
    return [round(BASE_US * (1.3 if rng.random() < slow_share else 1.0) *
                  (1 + rng.gauss(0, 0.005)), 1) for _ in range(ROUNDS)]


def plan_lines(seed=1):
    rng = random.Random(seed)
    out = []
    for h in HOSTS:
        # A floor of about 240 us: 200 quiet no-op runs.
        out.append({"host": h, "quiet": True, "calibration": [
            round(1000 + rng.random() * 300, 1) for _ in range(200)]})
    t0 = int(time.time() * 1e6) - 40 * 3600 * 1000000
    for ci, commit in enumerate(COMMITS):
        for hi, h in enumerate(HOSTS):
            slow = 1.10 if (ci + 1 >= 25 and h != "h4") else 1.0
            arms = [{"name": "new", "subject": True, "samples": [
                round(BASE_US * slow * (1 + rng.gauss(0, 0.01)), 1)
                for _ in range(ROUNDS)]},
                {"name": "old", "samples": [
                    round(BASE_US * (1 + rng.gauss(0, 0.01)), 1)
                    for _ in range(ROUNDS)]}]
            start = t0 + (ci * 3600 + hi * 60) * 1000000
            out.append({"host": h, "suite": "fleet", "bench": "step",
                        "tags": {"commit": commit}, "start_us": start,
                        "arms": arms})
            out.append({"host": h, "suite": "fleet", "bench": "noise",
                        "tags": {"commit": commit},
                        "start_us": start + 10 * 1000000, "arms": [
                            {"name": "a", "subject": True, "samples": [
                                round(BASE_US * (1 + rng.gauss(0, 0.01)), 1)
                                for _ in range(ROUNDS)]},
                            {"name": "b", "samples": [
                                round(BASE_US * (1 + rng.gauss(0, 0.01)), 1)
                                for _ in range(ROUNDS)]}]})
            grow = 1.005 ** (ci + 1 - 10) if (h == "h1" and ci + 1 >= 10) \
                else 1.0
            out.append({"host": h, "suite": "fleet", "bench": "drift",
                        "tags": {"commit": commit},
                        "start_us": start + 30 * 1000000, "arms": [
                            {"name": "new", "subject": True, "samples": [
                                round(BASE_US * grow *
                                      (1 + rng.gauss(0, 0.01)), 1)
                                for _ in range(ROUNDS)]},
                            {"name": "old", "samples": [
                                round(BASE_US * (1 + rng.gauss(0, 0.01)), 1)
                                for _ in range(ROUNDS)]}]})
            share = rng.choice((0.2, 0.5, 0.8))
            out.append({"host": h, "suite": "fleet", "bench": "modes",
                        "tags": {"commit": commit},
                        "start_us": start + 20 * 1000000, "arms": [
                            {"name": "a", "subject": True,
                             "samples": modes_samples(rng, share)},
                            {"name": "b",
                             "samples": modes_samples(rng, 0.5)}]})
    return out


def feed(w, lines):
    r = subprocess.run([FEED, w.endpoint, w.key("collector"), w.keys],
                       input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=120)
    return r.returncode == 0 or diag(r.stderr[-500:])


def settled(w, timeout=90):
    """The open change points once detection has caught up: the list is
    the same for 3 s, and every run's series was looked at (detection
    trails the writer on its own thread)."""
    last, since, end, body = None, time.time(), time.time() + timeout, {}
    while time.time() < end:
        body = w.pjson("regressions", "--json") or {}
        cur = json.dumps(body.get("change_points"), sort_keys=True)
        if cur != last:
            last, since = cur, time.time()
        elif time.time() - since > 3:
            break
        time.sleep(0.5)
    return body


def check_step(w, body):
    cps = body.get("change_points", {}).get("open", [])
    step = [c for c in cps if c["benchmark"] == "step"]
    by_host = {}
    for c in step:
        by_host.setdefault(c["host"], []).append(c)
    ok(sorted(by_host) == ["h1", "h2", "h3"] and
       all(len(v) == 1 for v in by_host.values()),
       "one change point per host with the step, none on h4: %s"
       % {h: len(v) for h, v in by_host.items()})
    for c in step:
        rng = (c["before"]["tags"].get("commit"),
               c["after"]["tags"].get("commit"))
        m = c.get("magnitudes", {})
        ok(rng == ("c24", "c25") and c["metric"] == "ratio" and
           c["outcome"] == "loss" and not c["within_noise"] and
           c["regression"] and abs(c["magnitude"] - 1.10) < 0.01 and
           abs((m.get("ratio") or 0) - 1.10) < 0.01 and
           abs((m.get("subject") or 0) - 1.10) < 0.01 and
           m.get("other") is None and c["hosts_with_step"] == 3 and
           c["hosts_total"] == 4,
           "%s: between %s and %s, %s %s, x%.4f (ratio %s, subject %s, "
           "other %s), %d of %d hosts" % (
               c["host"], rng[0], rng[1], c["metric"], c["outcome"] +
               (" (within noise)" if c["within_noise"] else ""),
               c["magnitude"], m.get("ratio"), m.get("subject"),
               m.get("other"), c["hosts_with_step"], c["hosts_total"]))
    others = [(c["benchmark"], c["host"]) for c in cps
              if c["benchmark"] not in ("step", "drift")]
    ok(others == [], "no change point on noise or timing modes: %s"
       % others)
    drift = [c for c in cps if c["benchmark"] == "drift"]
    d = drift[0] if len(drift) == 1 else {}
    start = int(d.get("after", {}).get("tags", {}).get("commit", "c0")[1:])
    rate = (d.get("trend") or {}).get("per_run", 0)
    # The drift's steps stored while it was young are superseded by it.
    gone = [c for c in body.get("change_points", {}).get("superseded", [])]
    ok(all(c["benchmark"] == "drift" and c["host"] == "h1" for c in gone),
       "superseded so far: the drift's early steps alone (%s)"
       % [(c["benchmark"], c["host"], c["after"]["tags"].get("commit"))
          for c in gone])
    ok(len(drift) == 1 and d["host"] == "h1" and 10 <= start <= 16 and
       0.003 < rate < 0.007 and d["regression"] and
       1.10 < d["magnitude"] < 1.20,
       "the drift: one change point on h1, a trend from c%02d on, %+.2f %% a "
       "run, x%.3f so far (%d change points: %s)" % (
           start, 100 * rate, d.get("magnitude", 0), len(drift),
           [(c["host"], c["after"]["tags"].get("commit")) for c in drift]))
    return {c["host"]: c["id"] for c in step}


def check_views(w, ids):
    r = w.parity("regressions")
    rows = [ln for ln in r.stdout.splitlines()
            if ln.split()[:1] and ln.split()[0].isdigit() and " step " in ln]
    ok(r.returncode == 1 and len(rows) == 3 and
       all("loss" in ln and "c24 .. c25" in ln and "3 of 4" in ln
           for ln in rows),
       "parity regressions exits 1; its table: one row a host, loss, "
       "c24 .. c25, 3 of 4 (%d):\n%s" % (r.returncode, "\n".join(rows)))
    hist = w.pjson("history", "step", "--json") or {}
    seen = {}
    for s in hist.get("series", []):
        for c in s.get("change_points", []):
            seen.setdefault(s.get("host"), []).append(c.get("id"))
    ok(seen == {h: [i] for h, i in ids.items()},
       "history step --json: the same change points, the same ids (%s; "
       "regressions %s)" % (seen, ids))
    # The collector's detector and `parity changes` are the same code:
    # h1's ratio series as stored gives the same index.
    h1 = [s for s in hist.get("series", []) if s.get("host") == "h1"]
    runs = h1[0].get("runs", []) if h1 else []
    lines = "".join(json.dumps({"median": x["ratio"],
                                "label": x["tags"].get("commit")}) + "\n"
                    for x in runs)
    r = subprocess.run([tj.PARITY, "changes", "--jsonl", "--json"],
                       input=lines, capture_output=True, text=True,
                       timeout=60)
    try:
        got = [c["label_after"] for c in
               json.loads(r.stdout)["metrics"][0]["change_points"]]
    except (ValueError, KeyError, IndexError):
        got = r.stderr.strip()
    ok(got == ["c25"], "parity changes on h1's stored ratios (%d runs): %s"
       % (len(runs), got))


def check_event(w, ids):
    """One fleet event for the step: one id to ack, three members, the
    same host count as each change point's; its line in the table; ack
    by its id acks all three, unack opens all three again."""
    body = w.pjson("regressions", "--json") or {}
    ev = body.get("change_points", {}).get("events", {}).get("open", [])
    step = [e for e in ev if e["benchmark"] == "step"]
    e = step[0] if len(step) == 1 else {}
    drift = [x for x in ev if x["benchmark"] == "drift"]
    ok(len(drift) == 1 and drift[0]["hosts"] == ["h1"] and
       drift[0]["trend"] and drift[0]["hosts_with_step"] == 1,
       "the drift is an event of its own, on h1")
    ok(len(step) == 1 and len(ev) == 2 and e["id"] == min(ids.values()) and
       sorted(e["members"]) == sorted(ids.values()) and
       e["hosts"] and sorted(e["hosts"]) == ["h1", "h2", "h3"] and
       e["hosts_with_step"] == 3 and e["hosts_total"] == 4 and
       e["direction"] == "slower" and e["outcome"] == "loss" and
       e["regression"] and not e["within_noise"] and
       e["before"]["tags"]["commit"] == "c24" and
       e["after"]["tags"]["commit"] == "c25" and
       1.09 < e["magnitude_min"] <= e["magnitude"] <= e["magnitude_max"]
       < 1.11, "one event: id %s (the smallest member), members %s, %s of "
       "%s hosts, %s, x%.4f (x%.4f to x%.4f)" % (
           e.get("id"), e.get("members"), e.get("hosts_with_step"),
           e.get("hosts_total"), e.get("direction"), e.get("magnitude", 0),
           e.get("magnitude_min", 0), e.get("magnitude_max", 0)))
    r = w.parity("regressions")
    want = ("  #%d step (new vs old): slower on 3 of 4 hosts between c24 and "
            "c25, ratio x%.2f (x%.3f to x%.3f), loss: %s" % (
                e.get("id", 0), e.get("magnitude", 0),
                e.get("magnitude_min", 0), e.get("magnitude_max", 0),
                ", ".join(e.get("hosts", []))))
    lines = r.stdout.splitlines()
    ok(lines[:1] == ["events (2):"] and want in lines[1:3] and any(
        ln.startswith("  #%d drift (new vs old): slower on 1 of 4 hosts "
                      "drifting from c" % (drift[0]["id"] if drift else 0))
        for ln in lines[1:3]), "the table's first lines:\n%s"
       % "\n".join(lines[:3]))
    r = w.parity("regressions", "ack", str(e.get("id", 0)), "--note",
                 "known: the slower build")
    ok(r.returncode == 0 and r.stdout.strip() == "change point %d acked, "
       "with its event: 3 change points on %s" % (
           e.get("id", 0), ", ".join(sorted(ids))),
       "ack the event's id: %s" % r.stdout.strip())
    r = w.parity("regressions", "--json")
    body = json.loads(r.stdout) if r.stdout else {}
    cps = body.get("change_points", {})
    step_open = [c for c in cps.get("open", []) if c["benchmark"] == "step"]
    ok(r.returncode == 1 and len(cps.get("acked", [])) == 3 and
       not step_open and len(cps["events"]["acked"]) == 1 and
       [x["benchmark"] for x in cps["events"]["open"]] == ["drift"],
       "every member acked, the event under acked; the drift still open "
       "(exit %d)" % r.returncode)
    r = w.parity("regressions", "unack", str(ids["h2"]))
    ok(r.returncode == 0 and r.stdout.strip() == "change point %d open "
       "again, with its event: 3 change points on %s" % (
           ids["h2"], ", ".join(sorted(ids))),
       "unack a member: its event opens again (%s)" % r.stdout.strip())
    r = w.parity("regressions")
    ok(r.returncode == 1, "an open regression fails again (%d)"
       % r.returncode)


def check_superseded(w, ids, rng_seed=2):
    """A change point detection no longer finds leaves the open list for
    "superseded": one stored (as an older collector's detection might
    have) on h1 at c10, where the series is level; h1's next run makes
    detection judge the series again."""
    w.psql("INSERT INTO change_points (benchmark_id, host_id, vars, "
           "subject, other, metric, before_run, after_run, before_value, "
           "after_value, magnitude, p_value, outcome, within_noise, "
           "regression, detected_at_us) SELECT r.benchmark_id, r.host_id, "
           "'{}', 'new', 'old', 'subject', (SELECT r2.id FROM runs r2 WHERE "
           "r2.benchmark_id = r.benchmark_id AND r2.host_id = r.host_id AND "
           "r2.tags->>'commit' = 'c09'), r.id, 1, 1.05, 1.05, 0.001, "
           "'parity', true, false, 1 FROM runs r JOIN hosts h ON h.id = "
           "r.host_id JOIN benchmarks b ON b.id = r.benchmark_id WHERE "
           "h.name = 'h1' AND b.name = 'step' AND r.tags->>'commit' = 'c10'")
    stale = w.psql("SELECT max(id) FROM change_points")
    before = w.psql("SELECT updated_at_us FROM change_points WHERE id = %d"
                    % ids["h1"])
    rng = random.Random(rng_seed)
    t = int(time.time() * 1e6)
    ok(feed(w, [{"host": "h1", "suite": "fleet", "bench": "step",
                 "tags": {"commit": "c41"}, "start_us": t, "arms": [
                     {"name": "new", "subject": True, "samples": [
                         round(BASE_US * 1.1 * (1 + rng.gauss(0, 0.01)), 1)
                         for _ in range(ROUNDS)]},
                     {"name": "old", "samples": [
                         round(BASE_US * (1 + rng.gauss(0, 0.01)), 1)
                         for _ in range(ROUNDS)]}]}]),
       "h1 runs c41")
    end, body = time.time() + 60, {}
    while time.time() < end:
        body = w.pjson("regressions", "--json") or {}
        gone = body.get("change_points", {}).get("superseded", [])
        if any(str(c["id"]) == stale for c in gone):
            break
        time.sleep(0.5)
    cps = body.get("change_points", {})
    gone = [c["id"] for c in cps.get("superseded", [])
            if c["benchmark"] == "step"]
    kept = sorted(c["id"] for c in cps.get("open", []) + cps.get("acked", [])
                  if c["benchmark"] == "step")
    ok(gone == [int(stale or 0)] and kept == sorted(ids.values()),
       "the change point at c10 is superseded (%s), the step's three keep "
       "their ids (%s)" % (gone, kept))
    h1 = [c for c in cps.get("open", []) + cps.get("acked", [])
          if c["host"] == "h1" and c["benchmark"] == "step"]
    ok(len(h1) == 1 and h1[0]["updated_at_us"] and before and
       h1[0]["updated_at_us"] > int(before) and
       h1[0]["after"]["tags"]["commit"] == "c25",
       "h1's change point judged again with c41: updated in place (%s, was "
       "%s), still c25" % (h1[0]["updated_at_us"] if h1 else None, before))


def main():
    tj.pf.need(tj.PARITY, tj.COLLECTOR, FEED)
    w = tj.World().allow_hosts(HOSTS)
    try:
        w.start_collector()
        ok(feed(w, plan_lines()), "fleet-feed sends 4 hosts x 40 commits "
           "x 3 benchmarks")
        body = settled(w)
        ids = check_step(w, body)
        check_views(w, ids)
        check_event(w, ids)
        check_superseded(w, ids)
    finally:
        w.close(tj.tap.n_failed > 0)
    tj.pf.finish()


if __name__ == "__main__":
    main()
