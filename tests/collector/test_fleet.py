#!/usr/bin/env python3
"""test_fleet.py fleet BUILD_DIR REQUEST -- the collector's threads under a
slow database (TAP).

Real processes, as tests/jobs (whose World fixture this imports): a
parity-collector with its private PostgreSQL in a fresh temp dir, three
`parity-agent run` processes streaming to it, the `parity` client,
psql over the cluster's Unix socket, 127.0.0.1 only. REQUEST is a
jobs-request (tests/helpers/jobs_request.c) that this test keeps open to
poll `stats` through a second client.

  slow query   --heartbeat-ms 200, three agents stream a ~12 s run. psql
               holds ACCESS EXCLUSIVE on `verdicts` for 5 s and `parity
               regressions` (which reads it) waits for it: it is answered
               after >= 4 s, while `acked` in stats keeps rising, samples
               rows grow, nobody is called offline and the loop's longest
               gap stays under 1 s. Every sample of the three results
               files is stored once.
  shared buffers
               the private cluster's shared_buffers is a sixteenth of the
               machine's memory, between 128 MiB and 1 GiB, and its
               autovacuum_naptime 10 s.
  renice       the two query workers' server processes run at nice 10,
               and so do their sessions' autogroups (where the kernel has
               them); one server process (the writer's) stays at 0.
  timeout      the collector restarted with --query-timeout 2s; psql
               holds `jobs` for 6 s: `parity jobs` exits 1 within ~4 s
               with the exact `query timed out` line, a raw Request gets
               status 7; after the lock goes the same command works.
  rows held    the agents stream again; psql holds every row of `hosts`
               (FOR NO KEY UPDATE) for 5 s: acks keep rising, no
               backend waits for a lock (co_seen's UPDATE of last_seen
               skips held rows on its own connection; the writer used to
               wait for it), and last_seen moves on once they are let go.
  benchmark held
               psql holds the stream benchmark's row FOR KEY SHARE for
               5 s, as another collector's writer storing a run of it
               does (its runs row's foreign key) until its COMMIT; the
               three agents start a new run: all three RunStarts are
               stored while it is held and no backend waits for a lock
               (the RunStart's upsert of the benchmark used to lock the
               row FOR UPDATE and wait, or deadlock with another writer).

The lock for the slow query is on `verdicts`, not `jobs`: the writer
thread's job tick runs `UPDATE job_hosts ... FROM jobs` every heartbeat,
so an ACCESS EXCLUSIVE lock on `jobs` stalls the writer itself (and so
every Ack) for as long as it is held. `verdicts` is written only at a
RunEnd, which none of the agents reaches while the lock is held.
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail)

ok, diag = tj.ok, tj.diag
# meson gives the built REQUEST relative to the build dir.
REQUEST = (os.path.join(tj.BUILD, sys.argv[3]) if len(sys.argv) > 3 else
           tj.REQUEST)

AGENTS = ("alpha", "beta", "gamma")
# One benchmark, so one run and one RunEnd per agent, at the very end:
# 160 rounds of two 30 ms sleeps and the harness's no-op is ~11-13 s of
# streaming (a batch at least every second: AG_STREAM_FLUSH_MS), so the
# 5 s lock, taken ~2 s in, ends well before any RunEnd.
STREAM_SUITE = """suite: stream
benchmarks:
  - name: trickle
    runs: 160
    warmup: 2
    arms:
      - name: a
        subject: true
        command: [sleep, "0.03"]
      - name: b
        command: [sleep, "0.03"]
"""
LOCK_S = 5
TIMEOUT_LINE = ("parity jobs: query timed out: it ran longer than the "
                "collector's --query-timeout of 2 s and was cancelled (ask "
                "for less, or raise --query-timeout)")


class Fleet(tj.World):
    """tests/jobs' World with collector flags of this test's choosing."""

    def start_collector(self, *extra):
        # Only this start's lines: after a restart the log already has
        # the last one's event=listening (CI once ran `parity jobs`
        # before the new collector had bound its port).
        since = len(self.log_text())
        self.collector = subprocess.Popen(
            self.collector_cmd(self.endpoint, 200, *extra),
            stdout=self.log, stderr=self.log)
        end = time.time() + 60
        while time.time() < end:
            if self.collector.poll() is not None:
                tj.bail("parity-collector exited %d" %
                        self.collector.returncode)
            if "event=listening" in self.log_text()[since:]:
                return
            time.sleep(0.1)
        tj.bail("parity-collector not listening after 60 s")

    def stop_collector(self):
        rc = self.stop(self.collector, wait=30)
        self.collector = None
        return rc

    def log_text(self):
        self.log.flush()
        with open(os.path.join(self.root, "collector.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def start_run(self, name):
        home = os.path.join(self.root, "agent-" + name)
        os.makedirs(home, exist_ok=True)
        log = open(os.path.join(home, "agent.log"), "ab")
        self.agents[name] = subprocess.Popen(
            [tj.AGENT, "run", os.path.join(self.suites, "stream.yaml"),
             "--out", os.path.join(home, "results.json"),
             "--collector", self.endpoint, "--collector-key",
             self.key("collector"), "--key", self.key(name) + "_secret",
             "--spool", os.path.join(home, "spool"), "--name", name,
             "--heartbeat-ms", "200"],
            stdout=log, stderr=log, cwd=home)

    def hold_lock(self, table, seconds):
        """psql holding ACCESS EXCLUSIVE on table for seconds, in the
        background; returns the Popen once the lock is granted (None if it
        never was within 10 s)."""
        p = subprocess.Popen(
            [os.path.join(tj.pg_bindir(), "psql"), "-X", "-q", "-v",
             "ON_ERROR_STOP=1", "-h", os.path.join(self.data, "pg"), "-U",
             "parity", "-d", "parity", "-c",
             "BEGIN; LOCK TABLE %s IN ACCESS EXCLUSIVE MODE; SELECT "
             "pg_sleep(%d); COMMIT;" % (table, seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        end = time.time() + 10
        while time.time() < end and p.poll() is None:
            if self.locks(table, True) == 1:
                return p
            time.sleep(0.05)
        diag("the lock on %s was not granted: %s" % (table, p.poll()))
        return None

    def locks(self, table, granted):
        """How many AccessExclusive (granted) or waiting (not granted)
        locks are on table."""
        text = self.psql(
            "SELECT count(*) FROM pg_locks WHERE relation = '%s'::regclass "
            "AND %s" % (table, "granted AND mode = 'AccessExclusiveLock'"
                        if granted else "NOT granted"))
        return int(text) if text else -1


class Stats:
    """One jobs-request kept open: `stats` answered by the loop itself,
    through a client of its own."""

    def __init__(self, w):
        self.p = subprocess.Popen(
            [REQUEST, w.endpoint, w.key("collector"), w.key("admin"),
             "3000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)

    def get(self):
        """The stats body as a dict, or None (each answer within 3 s:
        jobs-request prints TIMEOUT then)."""
        try:
            self.p.stdin.write("stats\t{}\n")
            self.p.stdin.flush()
            line = self.p.stdout.readline()
        except (OSError, ValueError):
            return None
        st, _, body = line.rstrip("\n").partition("\t")
        if st != "0":
            diag("stats: %s" % line.strip())
            return None
        return json.loads(body)

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def results_samples(w, name):
    path = os.path.join(w.root, "agent-" + name, "results.json")
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        diag("%s: %s" % (path, e))
        return None
    return sorted(s["wall_us"] for b in d["benchmarks"] for s in b["samples"])


def stored_samples(w, name):
    text = w.psql("SELECT s.wall_us FROM samples s JOIN runs r ON r.id = "
                  "s.run JOIN hosts h ON h.id = r.host_id WHERE h.name = "
                  "'%s' ORDER BY s.wall_us" % name)
    return [float(x) for x in text.split()] if text else []


def public_key(w, name):
    with open(w.key(name)) as f:
        for line in f:
            k, _, v = line.strip().partition(" = ")
            if k == "public-key":
                return v.strip('"')
    return None


def count(w, sql):
    text = w.psql(sql)
    return int(text) if text else -1


def case_slow_query(w):
    with open(os.path.join(w.suites, "stream.yaml"), "w") as f:
        f.write(STREAM_SUITE)
    w.start_collector()
    for n in AGENTS:
        w.start_run(n)
    # Streaming has begun on all three when each has a batch stored.
    end = time.time() + 30
    while time.time() < end:
        if count(w, "SELECT count(DISTINCT r.host_id) FROM batches b JOIN "
                 "runs r ON r.id = b.run") == 3:
            break
        time.sleep(0.2)
    if not ok(time.time() < end, "the three agents are streaming batches"):
        return
    ok(count(w, "SELECT count(*) FROM verdicts") == 0 and
       all(p.poll() is None for p in w.agents.values()),
       "no run has ended yet (the lock comes before any RunEnd)")

    stats = Stats(w)
    try:
        s0 = stats.get() or {}
        samples0 = count(w, "SELECT count(*) FROM samples")
        locker = w.hold_lock("verdicts", LOCK_S)
        if not ok(locker is not None, "psql holds ACCESS EXCLUSIVE on "
                  "verdicts for %d s" % LOCK_S):
            return
        t0 = time.time()
        query = subprocess.Popen(
            [tj.PARITY, "regressions"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, PARITY_COLLECTOR=w.endpoint,
                     PARITY_COLLECTOR_KEY=w.key("collector"),
                     PARITY_KEY=w.key("admin"), HOME=w.root))
        polls, in_lock, waiting, streaming = [], [], 0, False
        while query.poll() is None and time.time() - t0 < 20:
            s = stats.get()
            if s:
                polls.append((time.time() - t0, s["acked"],
                              s.get("loop_max_ms", -1)))
            if locker.poll() is None:   # rows committed under the lock
                in_lock.append(count(w, "SELECT count(*) FROM samples"))
                streaming = all(p.poll() is None for p in w.agents.values())
            if waiting == 0:
                waiting = w.locks("verdicts", False)
            time.sleep(0.5)
        if query.poll() is None:
            query.kill()
        out, err = query.communicate(timeout=10)
        took = time.time() - t0
        ok(locker.wait(timeout=10) == 0, "the lock holder ran its %d s "
           "and committed (%s)" % (LOCK_S, locker.stderr.read().strip()))
        ok(streaming, "the three agents were still running at the last "
           "look under the lock")
        ok(waiting >= 1, "while it waited, pg_locks showed a query waiting "
           "for verdicts (%d)" % waiting)
        ok(query.returncode == 0 and "0 open regressions" in out and
           took >= 4.0,
           "parity regressions, blocked by the lock, is answered after "
           "%.1f s (>= 4 s) and exits 0 (%d %s)" %
           (took, query.returncode, err.strip()))
        acked = [a for _, a, _ in polls]
        rises = sum(1 for x, y in zip(acked, acked[1:]) if y > x)
        gap, last_rise = 0.0, polls[0][0] if polls else 0.0
        for (t, a, _), (_, b, _) in zip(polls[1:], polls):
            if a > b:
                gap, last_rise = max(gap, t - last_rise), t
        if polls:
            gap = max(gap, polls[-1][0] - last_rise)
        ok(len(polls) >= 7 and s0.get("acked", -1) >= 0 and
           acked[-1] > s0["acked"] and rises >= 3 and gap <= 2.5,
           "stats answered %d times in the wait; acked rose %d times, "
           "%s -> %s, longest stretch without a new ack %.1f s (<= 2.5)" %
           (len(polls), rises, s0.get("acked"), acked[-1] if acked else None,
            gap))
        ok(len(in_lock) >= 5 and in_lock[-1] > samples0 >= 0,
           "samples rows grew while the lock was held (%d -> %s, %d counts)"
           % (samples0, in_lock[-1] if in_lock else None, len(in_lock)))
        # The old collector's loop did the database work itself: a query
        # stuck for 5 s was a 5 s gap of the loop (and 25 missed beats).
        # 1 s is a generous bound for a loop that never waits.
        loop_max = max((m for _, _, m in polls), default=-1)
        ok(0 <= loop_max < 1000, "stats loop_max_ms stayed under 1000 "
           "(%s)" % loop_max)

        # The agents finish; every sample of every results file stored.
        end = time.time() + 60
        for n, p in w.agents.items():
            try:
                rc = p.wait(timeout=max(1, end - time.time()))
            except subprocess.TimeoutExpired:
                rc = None
            ok(rc == 0, "%s's run exits 0 (%s)" % (n, rc))
        for n in AGENTS:
            want = results_samples(w, n)
            got = []
            end = time.time() + 15
            while time.time() < end:
                got = stored_samples(w, n)
                if want is not None and len(got) >= len(want):
                    break
                time.sleep(0.3)
            ok(want and got == want, "%s: %d samples stored, its results "
               "file has %s, the same wall_us" %
               (n, len(got), len(want) if want is not None else None))
            ok(count(w, "SELECT count(DISTINCT (s.run, s.batch_seq, s.idx))"
                     " FROM samples s JOIN runs r ON r.id = s.run JOIN hosts"
                     " h ON h.id = r.host_id WHERE h.name = '%s'" % n)
               == len(got), "%s: no sample stored twice" % n)
        # The stats client itself goes offline once it stops polling (it
        # sends no Heartbeats): only the agents' keys count here.
        log = w.log_text().splitlines()
        for n in AGENTS:
            pk = public_key(w, n)
            peer = "peer=%s " % pk
            ok(pk and any("event=hello" in l and peer in l for l in log) and
               not any("event=offline" in l and peer in l for l in log),
               "%s: its Hello is logged and no event=offline names it" % n)
        s = stats.get() or {}
        ok(0 <= s.get("loop_max_ms", -1) < 1000 and s.get("acked", 0) > 0 and
           s.get("queue_dropped") == 0 and s.get("dup_dropped") == 0,
           "final stats: loop_max_ms %s, acked %s, nothing dropped from a "
           "queue (%s) or as a resend (%s)" %
           (s.get("loop_max_ms"), s.get("acked"), s.get("queue_dropped"),
            s.get("dup_dropped")))
    finally:
        stats.close()


def case_timeout(w):
    rc = w.stop_collector()
    ok(rc == 0, "the collector exits 0 on SIGTERM (%d)" % rc)
    w.start_collector("--query-timeout", "2s")
    r = w.parity("jobs")
    ok(r.returncode == 0, "parity jobs works before the lock (%d %s)" %
       (r.returncode, r.stderr.strip()))
    locker = w.hold_lock("jobs", 6)
    if not ok(locker is not None, "psql holds ACCESS EXCLUSIVE on jobs "
              "for 6 s"):
        return
    raw = []
    t = threading.Thread(target=lambda: raw.extend(
        tj.requests(w, [("jobs", "{}")], timeout_ms=5000)))
    t.start()
    t0 = time.time()
    r = w.parity("jobs", timeout=20)
    took = time.time() - t0
    t.join(timeout=20)
    lines = r.stderr.strip().splitlines()
    ok(r.returncode == 1 and lines == [TIMEOUT_LINE] and r.stdout == "",
       "parity jobs exits 1 with the query-timeout line (%d: %s)" %
       (r.returncode, r.stderr.strip()))
    ok(1.9 <= took <= 4.0, "it was answered after %.1f s (the 2 s timeout, "
       "not the 6 s lock)" % took)
    ok(raw[:1] == [("7", TIMEOUT_LINE[len("parity jobs: "):])],
       "a raw Request in the same wait: status 7, the same text (%s)" % raw)
    ok(locker.poll() is None, "the lock was still held then")
    ok(locker.wait(timeout=15) == 0, "the lock holder committed")
    # Two workers by default: three more queries use both connections.
    got = [w.parity("jobs") for _ in range(3)]
    ok(all(g.returncode == 0 and g.stderr == "" for g in got),
       "after the lock, parity jobs works again, 3 times (%s)" %
       [(g.returncode, g.stderr.strip()) for g in got])


def streaming_again(w, before):
    """True once each agent has a batch stored after id `before`."""
    end = time.time() + 30
    while time.time() < end:
        if count(w, "SELECT count(DISTINCT r.host_id) FROM batches b JOIN "
                 "runs r ON r.id = b.run WHERE r.id > %d" % before) == 3:
            return True
        time.sleep(0.2)
    return False


def hold_rows(w, select, app, what):
    """psql running select (which locks rows) in a transaction that
    sleeps LOCK_S s, in the background: its Popen once it sleeps (the
    rows are held), else None, each with a test named what."""
    locker = subprocess.Popen(
        [os.path.join(tj.pg_bindir(), "psql"), "-X", "-q", "-v",
         "ON_ERROR_STOP=1", "-h", os.path.join(w.data, "pg"), "-U",
         "parity", "-d", "parity", "-c",
         "BEGIN; %s; SELECT pg_sleep(%d); COMMIT;" % (select, LOCK_S)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PGAPPNAME=app))
    end = time.time() + 10
    while time.time() < end and count(
            w, "SELECT count(*) FROM pg_stat_activity WHERE "
            "application_name = '%s' AND state = 'active' AND "
            "wait_event = 'PgSleep'" % app) != 1:
        time.sleep(0.05)
    if ok(time.time() < end, "%s for %d s" % (what, LOCK_S)):
        return locker
    diag("psql: %s %s" % (locker.poll(), locker.stderr.read()
                          if locker.poll() is not None else ""))
    return None


def case_rows_held(w):
    """A client holding every host's row: last_seen's UPDATE (co_seen)
    skips them on its own connection; the writer never waits."""
    before = count(w, "SELECT coalesce(max(id), 0) FROM runs")
    for n in AGENTS:
        w.start_run(n)
    if not ok(streaming_again(w, before), "rows held: the three agents "
              "stream a new run"):
        return
    stats = Stats(w)
    try:
        samples0 = count(w, "SELECT count(*) FROM samples")
        locker = hold_rows(w, "SELECT id FROM hosts FOR NO KEY UPDATE",
                           "rows-held", "psql holds every row of hosts (FOR "
                           "NO KEY UPDATE, as an UPDATE of last_seen would)")
        if not locker:
            return
        t0 = time.time()
        acked, waiting = [], []
        while locker.poll() is None and time.time() - t0 < 15:
            s = stats.get()
            if s:
                acked.append((time.time() - t0, s["acked"]))
            waiting.append(count(w, "SELECT count(*) FROM pg_locks WHERE "
                                 "NOT granted"))
            time.sleep(0.5)
        ok(locker.wait(timeout=10) == 0, "the row holder ran its %d s and "
           "committed (%s)" % (LOCK_S, locker.stderr.read().strip()))
        # The agents' batches come once a second: a rise every other look.
        rise_at = [t for (t, y), (_, x) in zip(acked[1:], acked) if y > x]
        gap = max((b - a for a, b in zip(rise_at, rise_at[1:])), default=99)
        ok(len(acked) >= 7 and len(rise_at) >= 3 and gap <= 2.0,
           "acked rose %d times in %d stats answers while the rows were "
           "held, at most %.1f s apart (<= 2 s: %s)" %
           (len(rise_at), len(acked), gap, [a for _, a in acked]))
        ok(len(waiting) >= 7 and max(waiting) == 0, "no backend waited for "
           "a lock in %d looks at pg_locks (the most waiting at once: %s)"
           % (len(waiting), max(waiting, default=None)))
        ok(count(w, "SELECT count(*) FROM samples") > samples0 >= 0,
           "samples rows grew while the rows were held")
        # Released: the agents' next Heartbeats write last_seen again.
        released = w.psql("SELECT now()")
        end = time.time() + 5
        fresh = -1
        while time.time() < end and fresh != 3:
            fresh = count(w, "SELECT count(*) FROM hosts WHERE name IN "
                          "('alpha', 'beta', 'gamma') AND last_seen > "
                          "'%s'::timestamptz" % released)
            time.sleep(0.2)
        ok(fresh == 3, "after the rows are let go, all three hosts' "
           "last_seen moves past that moment within 5 s (%d)" % fresh)
        for n, p in w.agents.items():
            try:
                rc = p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                rc = None
            ok(rc == 0, "rows held: %s's run exits 0 (%s)" % (n, rc))
        log = w.log_text()
        ok(not any("event=offline" in l and ("peer=%s " % public_key(w, n))
                   in l for n in AGENTS for l in log.splitlines()),
           "rows held: no event=offline names an agent")
    finally:
        stats.close()


def case_benchmark_held(w):
    """Another writer's run of the same benchmark, not committed yet:
    a RunStart does not wait for it."""
    before = count(w, "SELECT coalesce(max(id), 0) FROM runs")
    locker = hold_rows(w, "SELECT id FROM benchmarks WHERE suite = 'stream' "
                       "FOR KEY SHARE", "benchmark-held", "psql holds the "
                       "stream benchmark's row (FOR KEY SHARE, as a "
                       "writer's uncommitted run of it does)")
    if not locker:
        return
    t0 = time.time()
    for n in AGENTS:
        w.start_run(n)
    new, waiting = -1, []
    while locker.poll() is None and new != 3:
        new = count(w, "SELECT count(*) FROM runs r JOIN benchmarks b ON "
                    "b.id = r.benchmark_id WHERE b.suite = 'stream' AND "
                    "r.id > %d" % before)
        waiting.append(count(w, "SELECT count(*) FROM pg_locks WHERE NOT "
                             "granted"))
        time.sleep(0.2)
    held = locker.poll() is None
    ok(new == 3 and held, "benchmark held: the three RunStarts are stored "
       "while the row is held (%d runs after %.1f s, still held: %s)" %
       (new, time.time() - t0, held))
    ok(len(waiting) > 0 and max(waiting) == 0, "benchmark held: no backend "
       "waited for a lock in %d looks at pg_locks (most at once: %s)" %
       (len(waiting), max(waiting, default=None)))
    ok(locker.wait(timeout=15) == 0, "the benchmark's holder ran its %d s "
       "and committed (%s)" % (LOCK_S, locker.stderr.read().strip()))
    for n, p in w.agents.items():
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        ok(rc == 0, "benchmark held: %s's run exits 0 (%s)" % (n, rc))


def case_shared_buffers(w):
    """The private cluster's shared_buffers: a sixteenth of the machine's
    memory, between 128 MiB and 1 GiB (co_pg, docs/collector.md)."""
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    want = min(max(int(ram / 16 / 2 ** 20), 128), 1024)
    got = count(w, "SELECT setting::bigint * 8 / 1024 FROM pg_settings "
                "WHERE name = 'shared_buffers'")
    ok(got == want, "the private cluster's shared_buffers is %d MiB (%d "
       "MiB of memory / 16, within 128..1024: %d)" % (got, ram >> 20, want))
    nap = count(w, "SELECT setting FROM pg_settings WHERE name = "
                "'autovacuum_naptime'")
    ok(nap == 10, "its autovacuum visits every 10 s, so that the samples "
       "BRIN's summarisation requests are worked off (%d s)" % nap)


def proc_nice(pid):
    """(nice, autogroup nice or None) of a process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        nice = int(f.read().rsplit(")", 1)[1].split()[16])
    try:
        with open("/proc/%d/autogroup" % pid) as f:
            group = int(f.read().split("nice")[1])
    except FileNotFoundError:
        group = None     # a kernel without autogroup
    return nice, group


def case_renice(w):
    """The query workers' server processes yield the CPU to the writer's:
    nice 10, and so is their session's autogroup (each PostgreSQL server
    process is a session of its own, and with autogroup on its nice value
    alone weighed against nothing). The writer's stays at 0."""
    # Two workers by default: four queries reach both connections.
    got = [w.parity("hosts") for _ in range(4)]
    ok(all(g.returncode == 0 for g in got), "parity hosts, 4 times")
    text = w.psql("SELECT pid FROM pg_stat_activity WHERE backend_type = "
                  "'client backend' AND pid <> pg_backend_pid()")
    pids = [int(x) for x in text.split()] if text else []
    seen = [(pid,) + proc_nice(pid) for pid in pids]
    diag("server processes (pid, nice, autogroup nice): %s" % seen)
    niced = [s for s in seen if s[1] == 10]
    ok(len(niced) >= 2, "the two query workers' server processes run at "
       "nice 10 (%d of %d)" % (len(niced), len(seen)))
    if any(s[2] is None for s in seen):
        tj.pf.skip("autogroup nice of the query workers' server processes",
                    "this kernel has no /proc/PID/autogroup")
    else:
        ok(all(s[2] == 10 for s in niced), "their autogroups too: nice 10 "
           "(%s)" % [s[2] for s in niced])
    ok(any(s[1] == 0 and s[2] in (0, None) for s in seen),
       "a server process at nice 0 remains (the writer's)")


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, REQUEST)
    tj.run_world(Fleet(), case_slow_query, case_shared_buffers, case_renice,
                 case_timeout, case_rows_held, case_benchmark_held)


if __name__ == "__main__":
    main()
