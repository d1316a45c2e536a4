#!/usr/bin/env python3
"""test_storage.py STORAGE_TOOL BUILD_DIR -- migration 006 and retention (TAP).

A database made by the previous release's schema (migrations 001..005
only, applied by storage-tool init to the collector's own private
cluster), filled with rows in every table, then:

  migrate    storage-tool migrate applies 006: every row of every table
             survives (count and md5 of the old columns, per table);
             samples is partitioned by month with a default partition
             and autosummarized BRIN indexes; host_calibration holds
             exactly the calibration samples the old floor query read;
             run_summaries of every run and each host's floor on its
             row equal values computed here from the raw rows; a RunEnd
             after the migration stores the same floor that the old
             query and vd_floor gave before it.
  ingest     RunStart, batches through co_ingest_batch and co_ingest_batches,
             a Calibration and RunEnd through co_db: host_calibration
             gets the calibration samples with wall_us > 0, the host's
             row its new floor, run_summaries the run's summaries.
  ensure     co_retain_partitions makes the months ahead, moves rows
             of a new month out of the default partition, changes
             nothing when called again, refuses a bad month count.
  retention  co_retain_samples drops the old month's partition only,
             keeps recent samples, runs, arms, verdicts, summaries;
             `parity history`, `verdicts`, `report` and `hosts` of the
             real collector still answer, report's summaries unchanged.

Everything is independent of co_db: quantiles (type 7), floors and
means are computed here in Python from the rows inserted.
"""
import calendar
import datetime
import json
import math
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
TOOL = os.path.abspath(sys.argv[1])
import test_jobs as tj  # noqa: E402  (World, ok, diag, bail; reads argv[2])

ok, diag = tj.ok, tj.diag
DAY = 86400 * 1000000
NOW = int(time.time() * 1000000)


def month_start(t_us, months=0):
    d = datetime.datetime.fromtimestamp(t_us // 1000000, datetime.UTC)
    m = d.year * 12 + d.month - 1 + months
    return calendar.timegm((m // 12, m % 12 + 1, 1, 0, 0, 0)) * 1000000


def month_name(t_us, months=0):
    d = datetime.datetime.fromtimestamp(month_start(t_us, months) // 1000000,
                                        datetime.UTC)
    return "samples_p%04d%02d" % (d.year, d.month)


# Runs of the old job: ten days into the month 24 months ago, so that the
# month is whole and far older than a year.
OLD = month_start(NOW, -24) + 10 * DAY
NEW = NOW - DAY


def q7(xs, p):
    s = sorted(xs)
    h = (len(s) - 1) * p
    lo = math.floor(h)
    if lo >= len(s) - 1:
        return s[-1]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])


def floor_of(cal):
    if len(cal) < 100:
        return 25.0, True, len(cal)
    return q7(cal, 0.9) - q7(cal, 0.1), False, len(cal)


def summary_of(xs):
    """vd_summarize: n, min, q25, median, q75, max, iqr, mean."""
    xs = [x for x in xs if x > 0]
    if not xs:
        return (0,) + (None,) * 7
    s = sorted(xs)
    total = 0.0
    for x in s:
        total += x
    q25, q75 = q7(s, 0.25), q7(s, 0.75)
    return (len(s), s[0], q25, q7(s, 0.5), q75, s[-1], q75 - q25,
            total / len(s))


def tool(*args):
    r = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        diag("storage-tool %s: %s" % (" ".join(map(str, args)), r.stderr))
    return r


class Db:
    def __init__(self, w):
        self.w = w

    def run(self, sql):
        r = subprocess.run(
            [os.path.join(tj.pg_bindir(), "psql"), "-X", "-A", "-t", "-q",
             "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h",
             os.path.join(self.w.data, "pg"), "-U", "parity", "-d", "parity",
             "-f", "-"], input=sql, capture_output=True, text=True,
            timeout=120)
        if r.returncode != 0:
            tj.bail("psql: " + r.stderr[:2000])
        return [ln.split("\t") for ln in r.stdout.splitlines() if ln]

    def one(self, sql):
        return self.run(sql)[0][0]


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def insert(table, cols, rows):
    if not rows:
        return ""
    return "INSERT INTO %s (%s) VALUES\n%s;\n" % (
        table, ", ".join(cols),
        ",\n".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows))


class Fixture:
    """Rows of every 001..005 table, kept here to compute expectations."""

    def __init__(self):
        self.sql = []
        self.hosts = {1: "alpha", 2: "beta", 3: "gamma"}
        self.cal = []        # (host, taken_at_us, wall_us)
        self.samples = []    # (run, seq, idx, kind, arm, wall, start)
        self.runs = {}       # id -> (uuid, host, job, started, status, arms)
        self.make()

    def add(self, table, cols, rows):
        self.sql.append(insert(table, cols, rows))

    def make(self):
        env = json.dumps({"cpu_model": {"value": "Test CPU", "source": "t"},
                          "warnings": []})
        self.add("hosts", ["id", "public_key", "name", "tags", "online"],
                 [(i, "KEY_" + n, n, '{"rack": "r%d"}' % i, False)
                  for i, n in self.hosts.items()])
        self.add("environments", ["host_id", "digest", "environment_json"],
                 [(i, "d%d" % i, env) for i in self.hosts])
        self.add("suites", ["host_id", "name", "digest", "benchmarks"],
                 [(i, "s1", "x", "{b1,b2}") for i in self.hosts])
        self.add("host_suites", ["host_id", "name", "digest", "benchmarks"],
                 [(i, "s1", "x", "{b1,b2}") for i in self.hosts])
        self.add("benchmarks", ["id", "suite", "name"],
                 [(1, "s1", "b1"), (2, "s1", "b2")])
        self.add("jobs", ["id", "job_uuid", "suite", "requested_by",
                          "created_at_us", "state", "tags"],
                 [(1, "job-old", "s1", "admin", OLD, "ended",
                   '{"commit": "c1"}'),
                  (2, "job-new", "s1", "admin", NEW, "active",
                   '{"commit": "c2"}')])
        self.add("job_hosts", ["job", "host_id", "state", "queued_at_us",
                               "updated_at_us"],
                 [(j, h, "done", t, t) for j, t in ((1, OLD), (2, NEW))
                  for h in self.hosts])
        self.make_calibrations()
        self.make_runs()

    def make_calibrations(self):
        # alpha: one calibration two years ago, three yesterday (300 in
        # its window); beta: twelve an hour apart (its window of 1,000
        # holds exactly the newest ten); gamma: none (default floor).
        plan = [(1, OLD + 5)] + [(1, NEW - (k + 1) * 3600 * 1000000)
                                 for k in range(3)]
        plan += [(2, NOW - (k + 1) * 3600 * 1000000) for k in range(12)]
        cals, rows = [], []
        for cid, (host, t) in enumerate(plan, start=1):
            cals.append((cid, "cal-%d" % cid, host, t, 100))
            for i in range(100):
                w = 300.0 + ((cid * 131 + i * 71) % 257) * 1.25
                rows.append((cid, host, i, t, w))
                self.cal.append((host, t, w))
        self.add("calibrations", ["id", "calibration_id", "host_id",
                                  "taken_at_us", "n_samples"], cals)
        self.add("calibration_samples", ["calibration", "host_id", "idx",
                                          "taken_at_us", "wall_us"], rows)

    def make_runs(self):
        rid = 0
        runs, arms, batches, verdicts, floors = [], [], [], [], []
        for job, t0 in ((1, OLD), (2, NEW)):
            for host in self.hosts:
                for bench in (1, 2):
                    rid += 1
                    narms = 3 if rid == 2 else 2
                    self.make_run(rid, job, host, bench, t0 + rid * 1000000,
                                  narms, runs, arms, batches)
                    verdicts.append((rid, host, 0, 1, "old", "parity", 1.0,
                                     1.0, 0.05, 0.05, 0.04, 25.0, True, 0,
                                     0.04, 7, 7, json.dumps({
                                         "outcome": "parity", "ratio": 1.0,
                                         "best_ratio": 1.0,
                                         "tolerance": 0.05, "noise": 0.05,
                                         "best_tolerance": 0.04,
                                         "floor_us": 25.0, "parity": 0.04})))
                    floors.append((host, rid, 25.0, True, 0, 1000,
                                   t0 + rid * 1000000 + 60000000))
        # The run still going: alpha's, ended after the migration.
        rid += 1
        self.open_run = rid
        self.make_run(rid, 2, 1, 1, NEW + rid * 1000000, 2, runs, arms,
                      batches, status=None)
        self.add("runs", ["id", "run_uuid", "host_id", "benchmark_id",
                          "job_id", "label", "runs", "warmup",
                          "started_at_us", "status", "batches", "samples",
                          "ended_at_us"], runs)
        self.add("arms", ["run", "idx", "name", "subject", "argv"], arms)
        self.add("batches", ["run", "batch_seq", "n_samples"], batches)
        self.add("samples", ["run", "batch_seq", "idx", "kind", "arm",
                             "round", "position", "wall_us", "user_us",
                             "sys_us", "maxrss_kb", "exit_status",
                             "term_signal", "cpu", "start_unix_us", "error"],
                 [(r, q, i, k, a, i // 4, i % 4, w, 1.5, 0.5, 1000, 0, 0, 0,
                   s, "boom" if k == 3 else "")
                  for (r, q, i, k, a, w, s) in self.samples])
        self.add("verdicts", ["run", "host_id", "subject_arm", "other_arm",
                              "other_name", "outcome", "ratio", "best_ratio",
                              "tolerance", "noise", "best_tolerance",
                              "floor_us", "floor_is_default",
                              "floor_samples", "parity", "n_subject",
                              "n_other", "verdict_json"], verdicts)
        self.add("floors", ["host_id", "run", "floor_us", "is_default",
                            "n_samples", "window_size", "until_us"], floors)
        for t in ("hosts", "environments", "benchmarks", "calibrations",
                  "runs", "jobs"):
            self.sql.append("SELECT setval(pg_get_serial_sequence('%s', "
                            "'id'), (SELECT max(id) FROM %s));\n" % (t, t))

    def make_run(self, rid, job, host, bench, t0, narms, runs, arms,
                 batches, status="complete"):
        uuid = "run-%d" % rid
        names = ["new", "old", "third"][:narms]
        for a, n in enumerate(names):
            arms.append((rid, a, n, a == 0, "{sleep,1}"))
        rows = []
        # Per arm: 2 warmups, 7 measured (one of them 0 us in run 3), an
        # error in arm 1; 5 calibration samples (one 0 us); an odd clock
        # (start 0, the default partition) on one measured sample.
        for a in range(narms):
            for i in range(2):
                rows.append((1, a, 900.0 + i, t0 + i))
            for i in range(7):
                w = 0.0 if (rid == 3 and i == 2) else \
                    1000.0 + a * 50 + ((rid * 17 + i * 29) % 23) * 3.5
                rows.append((0, a, w, 0 if i == 6 else t0 + 100 + i))
            if a == 1:
                rows.append((3, a, 0.0, t0 + 200))
        for i in range(5):
            rows.append((2, 0, 0.0 if i == 0 else 350.0 + i * 7.25,
                         t0 + 300 + i * 10))
        half = len(rows) // 2
        for seq, part in enumerate((rows[:half], rows[half:])):
            batches.append((rid, seq, len(part)))
            for idx, (k, a, w, s) in enumerate(part):
                self.samples.append((rid, seq, idx, k, a, w, s))
                if k == 2 and w > 0:
                    self.cal.append((host, s, w))
        ended = None if status is None else t0 + 60000000
        runs.append((rid, uuid, host, bench, "job-old" if job == 1 else
                     "job-new", "", 7, 2, t0, status,
                     None if status is None else 2,
                     None if status is None else len(rows), ended))
        self.runs[rid] = (uuid, host, job, t0, status, narms)

    def summaries(self, rid):
        out = {}
        for a in range(self.runs[rid][5]):
            xs = [w for (r, q, i, k, arm, w, s) in self.samples
                  if r == rid and k == 0 and arm == a]
            errs = sum(1 for (r, q, i, k, arm, w, s) in self.samples
                       if r == rid and k == 3 and arm == a)
            out[a] = summary_of(xs) + (errs,)
        return out

    def host_floor(self, host, until, window=1000):
        c = sorted([(t, w) for (h, t, w) in self.cal
                    if h == host and t <= until], key=lambda x: -x[0])
        return floor_of([w for (t, w) in c[:window]])


OLD_TABLES = ["hosts", "environments", "suites", "benchmarks",
              "calibrations", "calibration_samples", "runs", "arms",
              "batches", "samples", "verdicts", "jobs", "job_hosts",
              "host_suites", "floors", "schema_version"]


def checksums(db, columns):
    out = {}
    for t in OLD_TABLES:
        cols = ", ".join(columns[t])
        out[t] = tuple(db.run(
            "SELECT count(*), md5(COALESCE(string_agg(x, '|' ORDER BY x), "
            "'')) FROM (SELECT ROW(%s)::text AS x FROM %s WHERE %s) s;"
            % (cols, t, "version <= 5" if t == "schema_version" else
               "true"))[0])
    return out


def num(v):
    return None if v == "" else float(v)


def check_summaries(db, fx, rids, what):
    rows = db.run("SELECT run, arm, n, min, q25, median, q75, max, iqr, "
                  "mean, errors FROM run_summaries WHERE run IN (%s) "
                  "ORDER BY run, arm;" % ",".join(map(str, rids)))
    got = {(int(r[0]), int(r[1])): (int(r[2]),) + tuple(num(v) for v in
                                                       r[3:10]) +
           (int(r[10]),) for r in rows}
    want = {(rid, a): v for rid in rids
            for a, v in fx.summaries(rid).items()}
    bad = [(k, got.get(k), want[k]) for k in want if got.get(k) != want[k]]
    ok(not bad and len(got) == len(want),
       "%s: run_summaries of %d runs equal vd_summarize of their measured "
       "samples computed here %s" % (what, len(rids), bad[:2]))


def case_migrate(w, db, fx):
    r = tool("init", w.data, 5)
    if r.returncode != 0:
        tj.bail("storage-tool init failed")
    ok(db.one("SELECT max(version) FROM schema_version;") == "5",
       "the database starts at the previous release's schema (version 5)")
    db.run("".join(fx.sql))
    columns = {t: [r[0] for r in db.run(
        "SELECT column_name FROM information_schema.columns WHERE "
        "table_name = '%s' AND table_schema = 'public' ORDER BY "
        "ordinal_position;" % t)] for t in OLD_TABLES}
    before = checksums(db, columns)
    ok(all(int(v[0]) > 0 for v in before.values()),
       "every table of 001..005 holds rows %s" % {t: v[0] for t, v in
                                                  before.items()})
    # The floor of the open run's RunEnd, by the old query, before.
    ended = fx.runs[fx.open_run][3] + 60000000
    old = [float(r[0]) for r in db.run(
        "SELECT wall_us FROM (SELECT wall_us, taken_at_us AS t FROM "
        "calibration_samples WHERE host_id = 1 AND taken_at_us <= %d "
        "UNION ALL SELECT s.wall_us, s.start_unix_us FROM samples s JOIN "
        "runs r ON s.run = r.id WHERE r.host_id = 1 AND s.kind = 2 AND "
        "s.start_unix_us <= %d AND s.wall_us > 0) c ORDER BY t DESC "
        "LIMIT 1000;" % (ended, ended))]
    floor_before = floor_of(old)
    ok(floor_before == fx.host_floor(1, ended) and not floor_before[1],
       "the old floor query gives alpha's floor %r" % (floor_before,))

    r = tool("migrate", w.data)
    ok(r.returncode == 0 and r.stdout.strip() == "applied 21",
       "storage-tool migrate applies 006 to 026 (%r)" % r.stdout)
    after = checksums(db, columns)
    bad = [t for t in OLD_TABLES if before[t] != after[t]]
    ok(not bad, "every row of every old table survived (count and md5 of "
       "its columns): differ %s" % bad)
    ok(db.one("SELECT max(version) FROM schema_version;") == "26",
       "schema_version is 26")
    # 025: every old verdict is wall time's, every old run judged on wall
    # alone, and no old calibration row has another metric's value.
    nv = db.run("SELECT count(*) FILTER (WHERE metric = 'wall'), count(*) "
                "FROM verdicts;")[0]
    ok(nv[0] == nv[1] and int(nv[1]) > 0 and db.one("SELECT count(*) FROM runs WHERE metrics <> '{wall}';")
       == "0" and db.one("SELECT count(*) FROM host_calibration WHERE "
                         "cpu_us IS NOT NULL OR peak_rss_kb IS NOT NULL;")
       == "0", "025: old verdicts are wall's, old runs judged on wall, "
       "old calibration rows have no other metric")
    # 017: every old calibration row is not quiet, so the floor of every
    # old host stays what it was.
    ok(db.run("SELECT count(*) FILTER (WHERE quiet), count(*) FROM "
              "host_calibration;")[0] == ["0", str(len(fx.cal))],
       "017 marks no old calibration row quiet")
    # 016: hosts finds each host's self-test through it, not a scan of
    # every job per host.
    ok(db.one("SELECT indexdef FROM pg_indexes WHERE indexname = "
              "'jobs_selftest';") == "CREATE INDEX jobs_selftest ON "
       "public.jobs USING btree (id) WHERE (suite = 'parity-selftest'::text)",
       "016 made the index of self-test jobs")
    # 009: the hosts of files stay approved by their files (no row).
    ok(db.one("SELECT count(*) FROM host_keys;") == "0"
       and db.one("SELECT count(*) FROM hosts;") == str(len(fx.hosts)),
       "009 adds host_keys empty: the old hosts stay approved by --allow")
    ok(db.one("SELECT count(*) FROM pg_constraint WHERE conrelid = "
              "'host_keys'::regclass AND contype = 'c';") == "1",
       "host_keys.state is checked (pending, approved, rejected, revoked)")
    ok(db.one("SELECT count(*) FROM refusals;") == "0",
       "010 adds refusals empty")
    ok(db.one("SELECT count(*) FROM job_hosts WHERE suite_digest <> '';")
       == "0" and db.one("SELECT count(*) FROM job_hosts;")
       == db.one("SELECT count(*) FROM job_hosts WHERE suite_digest = '';"),
       "012 gives every old job_hosts row an empty suite_digest")
    series = sorted(tuple(r) for r in db.run(
        "SELECT benchmark_id, host_id, vars::text, other FROM series;"))
    ok(series == sorted((str(b), str(h), "{}", "old") for h in fx.hosts
                        for b in (1, 2)),
       "008 lists each old verdict's series once: %r" % series)
    ok(db.one("SELECT relkind FROM pg_class WHERE relname = 'samples';")
       == "p", "samples is a partitioned table")
    parts = [r[0] for r in db.run(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
        "i.inhrelid WHERE i.inhparent = 'samples'::regclass ORDER BY 1;")]
    want = {"samples_default", month_name(OLD), month_name(NOW),
            month_name(NOW, 1), month_name(NOW, 2), month_name(NEW)}
    ok(set(parts) == want, "partitions: the months with rows, this month "
       "and the next two, and the default %s" % parts)
    ok(db.one("SELECT count(*) FROM samples_default;") ==
       str(sum(1 for x in fx.samples if x[6] == 0)),
       "rows with an odd clock (start 0) are in samples_default")
    brin = db.run("SELECT c.relname, array_to_string(c.reloptions, ',') "
                  "FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
                  "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_am am ON "
                  "am.oid = c.relam WHERE am.amname = 'brin' AND "
                  "t.relname LIKE 'samples%';")
    ok(len(brin) == len(parts) + 1 and
       all("autosummarize=on" in r[1] for r in brin),
       "every partition (and the parent) has a BRIN index with "
       "autosummarize %s" % brin)
    hc = sorted((int(r[0]), int(r[1]), float(r[2])) for r in db.run(
        "SELECT host_id, taken_at_us, wall_us FROM host_calibration;"))
    ok(hc == sorted(fx.cal), "host_calibration holds exactly the "
       "calibration samples the old floor read (%d)" % len(hc))
    ok("host_calibration_host" in db.one(
        "EXPLAIN SELECT wall_us FROM host_calibration WHERE host_id = 1 AND "
        "taken_at_us <= 5 ORDER BY taken_at_us DESC LIMIT 1000;") + " ".join(
        r[0] for r in db.run("SET enable_seqscan = off; EXPLAIN SELECT "
                             "wall_us FROM host_calibration WHERE host_id "
                             "= 1 ORDER BY taken_at_us DESC LIMIT 1000;")),
       "the floor query can use the (host_id, taken_at_us) index")
    check_summaries(db, fx, sorted(fx.runs), "backfill")
    at = int(db.one("SELECT max(floor_at_us) FROM hosts;"))
    rows = db.run("SELECT id, floor_us, floor_is_default, floor_samples "
                  "FROM hosts ORDER BY id;")
    got = {int(r[0]): (float(r[1]), r[2] == "t", int(r[3])) for r in rows}
    want = {h: fx.host_floor(h, at) for h in fx.hosts}
    ok(got == want and want[2][2] == 1000 and want[3][1],
       "each host's row holds its floor over the last 1,000 samples "
       "(beta's window exactly ten calibrations, gamma the default) %s"
       % got)
    ok(abs(at - NOW) < 600 * 1000000, "floor_at_us is the migration's now")

    r = tool("runend", w.data, "KEY_alpha", fx.runs[fx.open_run][0], 2,
             ended, 1000)
    ok(r.returncode == 0 and r.stdout.strip() == "verdicts 1",
       "RunEnd of the run left open stores its verdict (%r)" % r.stdout)
    fl = db.run("SELECT floor_us, is_default, n_samples FROM floors WHERE "
                "run = %d;" % fx.open_run)
    ok(fl and (float(fl[0][0]), fl[0][1] == "t", int(fl[0][2])) ==
       floor_before, "the floor at RunEnd after the migration is the one "
       "the old query gave before it %r" % (fl,))
    ok(db.one("SELECT floor_samples FROM verdicts WHERE run = %d;" %
              fx.open_run) == str(floor_before[2]),
       "its verdict records that floor's sample count")
    check_summaries(db, fx, [fx.open_run], "RunEnd")


def case_ingest(w, db, fx):
    old = [w for (h, _, w) in fx.cal if h == 3]
    r = tool("ingest", w.data, "KEY_gamma", "run-ingest", NOW)
    ok(r.returncode == 0 and r.stdout.strip() == "verdicts 1",
       "RunStart, co_ingest_batch, co_ingest_batches, Calibration, RunEnd stored "
       "(%r)" % r.stdout)
    rows = db.run("SELECT taken_at_us, wall_us FROM host_calibration WHERE "
                  "host_id = 3 AND taken_at_us >= %d ORDER BY 1, 2;" % NOW)
    # storage_tool: 3 batches of 12, each 2 calibration samples of which
    # one is 0 us (the others at a third past a whole us: the group's go
    # to host_calibration as text); the group holds one batch twice and
    # one stored before, whose samples count once; then 150 Calibration
    # samples at NOW + 5000.
    want = sorted([(NOW + seq * 1000 + i, 1000.0 + seq * 100 + i + 1 / 3)
                   for seq in range(3) for i in range(12) if i % 6 == 0] +
                  [(NOW + 5000, 400.0 + (i * 37) % 101) for i in range(150)])
    got = [(int(a), float(b)) for a, b in rows]
    ok(got == want,
       "host_calibration got the batches' calibration samples > 0 (both "
       "batch paths, each once, exactly) and the Calibration's (%d rows)"
       % len(got))
    f = db.run("SELECT floor_us, floor_is_default, floor_samples FROM hosts "
               "WHERE id = 3;")[0]
    exp = floor_of(old + [w for (_, w) in want])
    ok((float(f[0]), f[1] == "t", int(f[2])) == exp,
       "gamma's row holds the floor of its new samples %r" % (f,))
    rid = int(db.one("SELECT id FROM runs WHERE run_uuid = 'run-ingest';"))
    rows = db.run("SELECT arm, n, min, median, max FROM run_summaries WHERE "
                  "run = %d ORDER BY arm;" % rid)
    want = []
    for a in (0, 1):
        xs = [1000.0 + seq * 100 + i for seq in range(3) for i in range(12)
              if i % 6 >= 2 and (i % 6) % 2 == a]
        s = summary_of(xs)
        want.append([str(a), str(s[0])] + [repr(s[1]), repr(s[3]),
                                           repr(s[5])])
    ok([[r[0], r[1], repr(float(r[2])), repr(float(r[3])),
         repr(float(r[4]))] for r in rows] == want,
       "run_summaries of the ingested run %s" % rows)


def partitions(db):
    return [r[0] for r in db.run(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
        "i.inhrelid WHERE i.inhparent = 'samples'::regclass ORDER BY 1;")]


def case_ensure(w, db, fx):
    ahead = month_start(NOW, 5) + DAY
    db.run("INSERT INTO samples (run, batch_seq, idx, kind, arm, round, "
           "position, wall_us, user_us, sys_us, maxrss_kb, exit_status, "
           "term_signal, cpu, start_unix_us) VALUES (1, 99, 0, 1, 0, 0, 0, "
           "1.0, 0, 0, 0, 0, 0, 0, %d);" % ahead)
    ok(db.one("SELECT tableoid::regclass FROM samples WHERE batch_seq = "
              "99;") == "samples_default",
       "a sample five months ahead lands in samples_default")
    total = db.one("SELECT count(*) FROM samples;")
    r = tool("ensure", w.data, NOW, 6)
    ok(r.returncode == 0, "co_retain_partitions(now, 6)")
    parts = partitions(db)
    ok(all(month_name(NOW, k) in parts for k in range(7)),
       "partitions for this month and the next six %s" % parts)
    ok(db.one("SELECT tableoid::regclass FROM samples WHERE batch_seq = "
              "99;") == month_name(NOW, 5) and
       db.one("SELECT count(*) FROM samples;") == total,
       "the default partition's row of that month moved into it, none lost")
    r = tool("ensure", w.data, NOW, 6)
    ok(r.returncode == 0 and partitions(db) == parts,
       "a second call changes nothing")
    r = tool("ensure", w.data, NOW, 25)
    ok(r.returncode == 1 and "partitions: 25 months ahead (0..24)" in
       r.stderr, "25 months ahead refused: %s" % r.stderr.strip())
    db.run("DELETE FROM samples WHERE batch_seq = 99;")


def report_summaries(rep):
    out = {}
    for run in (rep or {}).get("run_list", []):
        for a, arm in enumerate(run["arms"]):
            s = arm["summary"]
            out[(run["run_id"], a)] = (
                (s["n"], s["min"], s["q25"], s["median"], s["q75"],
                 s["max"], s["iqr"], s["mean"]) if s else (0,) + (None,) * 7
            ) + (arm["errors"],)
    return out


def case_retention(w, db, fx):
    keep = 365 * DAY
    cutoff = NOW - keep
    counts = {t: db.one("SELECT count(*) FROM %s;" % t) for t in
              ("runs", "arms", "verdicts", "run_summaries", "floors",
               "batches", "calibration_samples")}
    old_runs = [r for r, v in fx.runs.items() if v[2] == 1]
    keep_samples = db.one("SELECT count(*) FROM samples s JOIN runs r ON "
                          "r.id = s.run WHERE r.started_at_us >= %d;"
                          % cutoff)
    hc_keep = db.one("SELECT count(*) FROM host_calibration WHERE "
                     "taken_at_us >= %d;" % cutoff)
    r = tool("retention", w.data, 0, NOW)
    ok(r.returncode == 1 and "retention: keep 0 µs and now %d µs must be "
       "> 0" % NOW in r.stderr, "keep 0 refused: %s" % r.stderr.strip())
    r = tool("retention", w.data, keep, NOW)
    ok(r.returncode == 0 and r.stdout.strip() == "dropped 1",
       "co_retain_samples(365 d) drops one partition (%r)" % r.stdout)
    parts = partitions(db)
    ok(month_name(OLD) not in parts and month_name(NEW) in parts and
       "samples_default" in parts,
       "the old month's partition is gone, the recent ones stay %s" % parts)
    ok(db.one("SELECT count(*) FROM samples WHERE run IN (%s);" %
              ",".join(map(str, old_runs))) == "0",
       "no sample of the old job's runs is left (default partition too)")
    ok(db.one("SELECT count(*) FROM samples;") == keep_samples,
       "every sample of the recent runs is kept, odd clocks included (%s)"
       % keep_samples)
    ok(db.one("SELECT count(*) FROM host_calibration;") == hc_keep and
       db.one("SELECT count(*) FROM host_calibration WHERE taken_at_us < "
              "%d;" % cutoff) == "0",
       "host_calibration rows before the cutoff are deleted, later kept")
    after = {t: db.one("SELECT count(*) FROM %s;" % t) for t in counts}
    ok(after == counts, "runs, arms, verdicts, summaries, floors, batches "
       "and calibration_samples are all kept %s" % after)
    r = tool("retention", w.data, keep, NOW)
    ok(r.returncode == 0 and r.stdout.strip() == "dropped 0",
       "a second retention drops nothing")

    w.start_collector()
    st, text = tj.requests(w, [("report", '{"job": "job-old"}')])[0]
    try:
        rep = json.loads(text) if st == "0" else None
    except ValueError:
        rep = None
    if rep is None:
        diag("report: %s %s" % (st, text[:500]))
    want = {(fx.runs[rid][0], a): v for rid in old_runs
            for a, v in fx.summaries(rid).items()}
    got = report_summaries(rep)
    ok(got == want, "report of the old job: every arm's summary and error "
       "count as computed here from the samples now dropped")
    hist = w.pjson("history", "b1", "--json")
    groups = [row["group"] for p in (hist or {}).get("pairs", [])
              for row in p["rows"]]
    ok("jjob-old" in groups and "jjob-new" in groups,
       "history still lists the old job %s" % groups)
    v = w.pjson("verdicts", "job-old", "--json")
    hosts = [e["host"] for c in (v or {}).get("comparisons", [])
             for e in c["hosts"] if "verdict" in e]
    ok(len(hosts) == 6, "verdicts of the old job: all six runs' verdicts "
       "%s" % hosts)
    h = w.pjson("hosts", "--json")
    rows = {r[0]: r for r in db.run(
        "SELECT name, floor_us, floor_is_default, floor_samples, online, "
        "(extract(epoch FROM last_seen) * 1000000)::bigint FROM hosts;")}
    good = h is not None and len(h["hosts"]) == 3
    for x in (h or {}).get("hosts", []):
        r = rows.get(x["name"])
        good = good and r is not None and \
            x["floor_us"] == float(r[1]) and \
            x["floor_default"] == (r[2] == "t") and \
            x["floor_samples"] == int(r[3]) and x["online"] is False and \
            x["last_seen_us"] == int(r[5])
    ok(good, "hosts: each host's floor, online and last_seen are its row's")


def main():
    tj.pf.need(TOOL, tj.COLLECTOR, tj.PARITY, tj.REQUEST)
    w = tj.World()
    db = Db(w)
    fx = Fixture()
    keep = False
    try:
        case_migrate(w, db, fx)
        case_ingest(w, db, fx)
        case_ensure(w, db, fx)
        case_retention(w, db, fx)
    finally:
        keep = tj.tap.n_failed > 0 and os.environ.get("PARITY_KEEP") == "1"
        if w.collector is None:   # else it stops the cluster on SIGTERM
            subprocess.run([TOOL, "stop", w.data], capture_output=True,
                           timeout=60)
        w.close(keep)
    tj.pf.finish()


if __name__ == "__main__":
    main()
