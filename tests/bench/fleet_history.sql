-- fleet_history.sql -- a year of nightly jobs on a fleet, bulk-loaded into
-- the schema of migrations 001..005 (the collector before partitioned storage), for
-- tests/bench/fleet_load.sh. A later collector migrates it on its first
-- start, as it would a real database, so this file never needs to know
-- the newer schema (partitions, summaries, host state).
--
--   psql -v keys=FILE -v hosts=50 -v days=365 -v benchmarks=4 -v rounds=92
--        -v ON_ERROR_STOP=1 -f fleet_history.sql
--
-- keys: a text file of "INDEX<TAB>NAME<TAB>Z85-PUBLIC-KEY" lines (written
-- by `fleet-load keygen`); the first :hosts agents are the history's
-- hosts, so that the live benchmark's streamers are hosts with a year of
-- history behind them.
--
-- Every night at 02:00 UTC one job runs the suite "fleet" on every host:
-- one run per benchmark, arms "new" (the subject) and "old", :rounds
-- rounds. A round is 3 samples: its calibration no-op (kind 2) and one
-- measured sample (kind 0) per arm, stored in batches of 512 as the
-- agent sends them. Each run has its verdict (mostly parity, now and then
-- win or loss, so that regressions has something to find), its floor
-- row, and each host a weekly Calibration of 100 samples.
--
-- samples = days * hosts * benchmarks * rounds * 3: 365 * 50 * 4 * 92 * 3
-- = 20,148,000.

\set ON_ERROR_STOP on
SET synchronous_commit = off;
SET maintenance_work_mem = '256MB';

CREATE TEMP TABLE fl_keys (idx int, name text, public_key text);
\set copy_keys '\\copy fl_keys FROM ' :'keys'
:copy_keys

-- Midnight UTC today, in unix microseconds; night d (0 = oldest) starts at
-- 02:00 UTC, :days nights ago + d.
CREATE TEMP TABLE fl_p AS SELECT
    (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC'))
     * 1000000)::bigint AS today_us,
    :days::int AS days, :hosts::int AS hosts, :benchmarks::int AS nbench,
    :rounds::int AS rounds;

INSERT INTO hosts (public_key, name, agent_version, key_claimed, tags,
                   online, first_seen, last_hello, last_seen)
SELECT k.public_key, k.name, 'history', k.public_key,
       '{"arch": "x86_64"}', false,
       now() - make_interval(days => p.days + 1), now() - interval '1 day',
       now() - interval '1 day'
FROM fl_keys k, fl_p p WHERE k.idx < p.hosts ORDER BY k.idx;

CREATE TEMP TABLE fl_hosts AS
SELECT h.id, k.idx FROM hosts h JOIN fl_keys k USING (public_key), fl_p p
WHERE k.idx < p.hosts;

INSERT INTO environments (host_id, digest, environment_json)
SELECT id, md5(e), e FROM fl_hosts,
  LATERAL (SELECT '{"cpu_model":"fleet-load history CPU","kernel":"6.1.0",'
                  '"arch":"x86_64","logical_cpus":2}'::text AS e) x;

INSERT INTO benchmarks (suite, name)
SELECT 'fleet', 'bench' || b FROM fl_p, generate_series(0, nbench - 1) b
ON CONFLICT DO NOTHING;

INSERT INTO suites (host_id, name, digest, benchmarks)
SELECT h.id, 'fleet', md5('fleet'),
       (SELECT array_agg('bench' || b ORDER BY b)
        FROM generate_series(0, p.nbench - 1) b)
FROM fl_hosts h, fl_p p;
INSERT INTO host_suites (host_id, name, digest, benchmarks)
SELECT host_id, name, digest, benchmarks FROM suites
WHERE host_id IN (SELECT id FROM fl_hosts);

-- One job a night. Ids 'f1ee' + 8 hex digits: 12 hex digits like the
-- collector's, never equal to a random one it makes (it checks anyway).
CREATE TEMP TABLE fl_jobs AS
SELECT d, 'f1ee' || lpad(to_hex(d), 8, '0') AS job_uuid,
       p.today_us - (p.days - d)::bigint * 86400000000 + 7200000000 AS at_us,
       substr(md5('commit' || d), 1, 12) AS commit
FROM fl_p p, generate_series(0, (SELECT days FROM fl_p) - 1) d;

INSERT INTO jobs (job_uuid, suite, tags, label, hosts_spec, requested_by,
                  created_at_us, state, ended_at_us)
SELECT job_uuid, 'fleet',
       jsonb_build_object('commit', commit, 'branch', 'main'), 'nightly',
       'all', 'fleet-load-history', at_us, 'ended', at_us + 3600000000
FROM fl_jobs ORDER BY d;

INSERT INTO job_hosts (job, host_id, state, queued_at_us, offered_at_us,
                       ended_at_us, updated_at_us)
SELECT j.id, h.id, 'done', fj.at_us, fj.at_us, fj.at_us + 3600000000,
       fj.at_us + 3600000000
FROM fl_jobs fj JOIN jobs j USING (job_uuid) CROSS JOIN fl_hosts h;

-- Runs: night, host, benchmark; each benchmark 10 minutes after the last.
INSERT INTO runs (run_uuid, host_id, benchmark_id, job_id, label, tags, runs,
                  warmup, started_at_us, environment, status, reason,
                  batches, samples, ended_at_us)
SELECT format('hist-%s-%s-%s', fj.d, h.idx, b.n), h.id, b.id, fj.job_uuid,
       'nightly', jsonb_build_object('commit', fj.commit, 'branch', 'main'),
       p.rounds, 0, fj.at_us + b.n * 600000000::bigint,
       (SELECT e.id FROM environments e WHERE e.host_id = h.id),
       'complete', '', (p.rounds * 3 + 511) / 512, p.rounds * 3,
       fj.at_us + b.n * 600000000::bigint + 300000000
FROM fl_jobs fj CROSS JOIN fl_hosts h
CROSS JOIN (SELECT id, substr(name, 6)::int AS n FROM benchmarks
            WHERE suite = 'fleet') b
CROSS JOIN fl_p p
ORDER BY fj.d, h.idx, b.n;

CREATE TEMP TABLE fl_runs AS
SELECT r.id, r.host_id, r.started_at_us,
       split_part(r.run_uuid, '-', 2)::int AS d,
       split_part(r.run_uuid, '-', 3)::int AS hidx,
       split_part(r.run_uuid, '-', 4)::int AS bn
FROM runs r WHERE r.run_uuid LIKE 'hist-%';
CREATE INDEX ON fl_runs (d);
ANALYZE fl_runs;

INSERT INTO arms (run, idx, name, subject, argv)
SELECT id, a, CASE a WHEN 0 THEN 'new' ELSE 'old' END, a = 0,
       ARRAY['/bin/true']
FROM fl_runs, generate_series(0, 1) a;

INSERT INTO batches (run, batch_seq, n_samples)
SELECT r.id, s, least(512, p.rounds * 3 - s * 512)
FROM fl_runs r, fl_p p, generate_series(0, (p.rounds * 3 + 511) / 512 - 1) s;

-- The outcome of (night, host, benchmark): mostly parity; a host's
-- benchmark turns loss or win on some nights.
CREATE TEMP TABLE fl_out AS
SELECT r.id, r.host_id,
       CASE WHEN (r.d * 7 + r.hidx * 13 + r.bn * 5) % 23 = 0 THEN 'loss'
            WHEN (r.d * 11 + r.hidx * 3 + r.bn) % 29 = 0 THEN 'win'
            ELSE 'parity' END AS outcome,
       1000.0 + r.hidx * 3 + r.bn * 50 AS base_us
FROM fl_runs r;

INSERT INTO verdicts (run, host_id, subject_arm, other_arm, other_name,
                      outcome, ratio, best_ratio, tolerance, noise,
                      best_tolerance, floor_us, floor_is_default,
                      floor_samples, parity, diagnostics, extra_runs,
                      n_subject, n_other, verdict_json)
SELECT o.id, o.host_id, 0, 1, 'old', o.outcome, v.ratio, v.ratio, 0.02, 0.01,
       0.02, 25, false, 100, 0.02, 0, 0, p.rounds, p.rounds,
       json_build_object('outcome', o.outcome, 'ratio', v.ratio,
         'best_ratio', v.ratio, 'tolerance', 0.02, 'noise', 0.01,
         'best_tolerance', 0.02, 'floor_us', 25, 'parity', 0.02,
         'diagnostics', json_build_array(), 'extra_runs', 0,
         'subject', json_build_object('n', p.rounds, 'min', o.base_us * v.ratio,
           'q25', o.base_us * v.ratio, 'median', o.base_us * v.ratio,
           'q75', o.base_us * v.ratio, 'max', o.base_us * v.ratio,
           'iqr', 0, 'mean', o.base_us * v.ratio),
         'other', json_build_object('n', p.rounds, 'min', o.base_us,
           'q25', o.base_us, 'median', o.base_us, 'q75', o.base_us,
           'max', o.base_us, 'iqr', 0, 'mean', o.base_us))::text
FROM fl_out o CROSS JOIN fl_p p,
  LATERAL (SELECT CASE o.outcome WHEN 'loss' THEN 1.25
                  WHEN 'win' THEN 0.8 ELSE 1.0 END AS ratio) v;

INSERT INTO floors (host_id, run, floor_us, is_default, n_samples,
                    window_size, until_us)
SELECT r.host_id, r.id, 25, false, 1000, 1000, r.started_at_us + 300000000
FROM fl_runs r;

-- A weekly Calibration of 100 samples per host.
INSERT INTO calibrations (calibration_id, host_id, taken_at_us, n_samples)
SELECT format('hist-cal-%s-%s', w, h.idx), h.id,
       p.today_us - (p.days - w * 7)::bigint * 86400000000 + 3600000000, 100
FROM fl_hosts h, fl_p p, generate_series(0, (p.days - 1) / 7) w;
INSERT INTO calibration_samples (calibration, host_id, idx, taken_at_us,
                                 wall_us)
SELECT c.id, c.host_id, i, c.taken_at_us + i * 1000,
       30.0 + ((c.id * 31 + i * 17) % 100) / 10.0
FROM calibrations c, generate_series(0, 99) i
WHERE c.calibration_id LIKE 'hist-cal-%';

-- Samples, a month of nights per statement. Sample k of a run: round
-- k / 3; position k % 3: 0 the calibration no-op (kind 2), 1 arm "new",
-- 2 arm "old" (kind 0); batch k / 512, index k % 512.
SELECT format(
  'INSERT INTO samples (run, batch_seq, idx, kind, arm, round, position, '
  'wall_us, user_us, sys_us, maxrss_kb, exit_status, term_signal, cpu, '
  'start_unix_us, error) '
  'SELECT r.id, k / 512, k %% 512, CASE k %% 3 WHEN 0 THEN 2 ELSE 0 END, '
  'CASE k %% 3 WHEN 2 THEN 1 ELSE 0 END, k / 3, k %% 3, '
  'CASE k %% 3 WHEN 0 THEN 30.0 + ((r.id + k) %% 97) / 10.0 '
  'ELSE (o.base_us + ((r.id * 7 + k * 13) %% 101) / 10.0) '
  '* CASE WHEN k %% 3 = 1 AND o.outcome = ''loss'' THEN 1.25 '
  'WHEN k %% 3 = 1 AND o.outcome = ''win'' THEN 0.8 ELSE 1.0 END END, '
  '300.0, 100.0, 2048, 0, 0, (k %% 2), r.started_at_us + k::bigint * 1000, '''' '
  'FROM fl_runs r JOIN fl_out o USING (id), '
  'generate_series(0, %s - 1) k WHERE r.d >= %s AND r.d < %s',
  p.rounds * 3, m * 30, m * 30 + 30)
FROM fl_p p, generate_series(0, (p.days - 1) / 30) m
ORDER BY m
\gexec

-- No series rows here: this loads the schema of 001..005, and migration
-- 008 fills series from these verdicts when the collector migrates it.

-- History does not keep its hosts online; the live agents say Hello.
ANALYZE;
SELECT count(*) AS history_samples FROM samples;
