-- changes_history.sql -- a fleet's nightly history for the regressions
-- benchmark (tests/bench/changes_bench.sh), bulk-loaded into
-- the schema the collector makes (migrations 001..007).
--
--   psql -v benchmarks=100 -v hosts=10 -v varsets=10 -v nights=200
--        -v rounds=30 -v ON_ERROR_STOP=1 -f changes_history.sql
--
-- Series: benchmarks x hosts x varsets (runs.vars {"size": "sV"}), each
-- with subject arm "new" and other arm "old". Every night one job per
-- variable set runs the suite "nightly" on every host (runs.job_id; tags
-- {"commit": the night's commit, "branch": "main"}, so that a night's
-- jobs on all hosts share a commit): one complete run per benchmark, two
-- arms, a run_summaries row per arm and one verdict (subject arm 0
-- against arm 1). runs = benchmarks x hosts x varsets x nights; the
-- default is 100 x 10 x 10 x 200 = 2,000,000 runs, 4,000,000 arms and
-- summaries, 2,000,000 verdicts. No samples: every query measured reads
-- summaries and verdicts, never samples.
--
-- Values: an arm's per-run median is base x (1 + noise), noise about 1 %
-- (sd) from a hash of the run id (deterministic), its quartiles and
-- extremes at fixed fractions of it; the verdict's outcome follows the
-- ratio (loss above 1.03, win below 0.97, else parity), so that now and
-- then a noisy pair flips as it does on a real fleet.
--
-- Planted steps: (benchmark, variable set) pairs with (7 b + 13 v) % 80
-- = 0 (1.25 % of them) get a 10 % slower subject from a night in the last
-- quarter on their first 5..10 hosts (about 1 % of series), and a
-- change_points row per stepped series for metrics 'ratio' and 'subject'
-- (open, regression, as co_detect would store them); every fourth pair
-- is acked. Each host's kernel changes at the middle night (a second
-- environment), so series have an annotation.
--
-- Ids are explicit (the tables are empty in a fresh cluster), so that
-- arms, summaries and verdicts are made from arithmetic on run ids, not
-- joins: run id = 1 + ((night * varsets + v) * hosts + h) * benchmarks + b.
-- FK triggers are skipped (session_replication_role = replica: the rows
-- are consistent by construction), indexes are kept and maintained.

\set ON_ERROR_STOP on
SET synchronous_commit = off;
SET maintenance_work_mem = '256MB';
SET work_mem = '64MB';
SET session_replication_role = replica;

CREATE TEMP TABLE ch_p AS SELECT
    (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC'))
     * 1000000)::bigint AS today_us,
    :benchmarks::bigint AS nb, :hosts::bigint AS nh, :varsets::bigint AS nv,
    :nights::bigint AS nn, :rounds::int AS rounds;

-- A pseudo-random number in [0, 1) from (x, salt): a hash, not a
-- generator, so every statement below sees the same value for a run.
CREATE FUNCTION pg_temp.ch_u(x bigint, salt bigint) RETURNS float8
    LANGUAGE sql IMMUTABLE AS
    $$ SELECT (hashint8extended(x, salt) & 16777215)::float8 / 16777216.0 $$;

INSERT INTO hosts (id, public_key, name, agent_version, key_claimed, tags,
                   online, first_seen, last_hello, last_seen, floor_us,
                   floor_is_default, floor_samples, floor_at_us)
SELECT h + 1, rpad('bench9-host-' || h, 40, 'x'),
       'host-' || lpad(h::text, 3, '0'), '0.9.0-history',
       rpad('bench9-host-' || h, 40, 'x'), '{"arch": "x86_64"}', false,
       now() - make_interval(days => p.nn::int + 1), now() - interval '1 day',
       now() - interval '1 day', 25.0 + h, false, 1000, p.today_us
FROM ch_p p, generate_series(0, p.nh - 1) h;
SELECT setval('hosts_id_seq', (SELECT max(id) FROM hosts));

-- Two snapshots per host: the kernel changes at the middle night.
INSERT INTO environments (id, host_id, digest, environment_json)
SELECT h * 2 + k + 1, h + 1, md5(e), e
FROM ch_p p, generate_series(0, p.nh - 1) h, generate_series(0, 1) k,
  LATERAL (SELECT format('{"cpu_model":"bench9 CPU","kernel":"6.1.0-%s",'
                         '"arch":"x86_64","logical_cpus":2,'
                         '"governor":"performance"}', k + 1) AS e) x;
SELECT setval('environments_id_seq', (SELECT max(id) FROM environments));

INSERT INTO benchmarks (id, suite, name)
SELECT b + 1, 'nightly', 'bench' || lpad(b::text, 4, '0')
FROM ch_p p, generate_series(0, p.nb - 1) b;
SELECT setval('benchmarks_id_seq', (SELECT max(id) FROM benchmarks));

INSERT INTO suites (host_id, name, digest, benchmarks)
SELECT h.id, 'nightly', md5('nightly'),
       (SELECT array_agg(name ORDER BY id) FROM benchmarks)
FROM hosts h;
INSERT INTO host_suites (host_id, name, digest, benchmarks)
SELECT host_id, name, digest, benchmarks FROM suites;

-- One job per (night, variable set); ids 'b9' + 10 hex digits.
CREATE TEMP TABLE ch_jobs AS
SELECT d * p.nv + v + 1 AS id, d, v,
       'b9' || lpad(to_hex(d * p.nv + v), 10, '0') AS job_uuid,
       p.today_us - (p.nn - d) * 86400000000 + 7200000000 AS night_us,
       jsonb_build_object('commit', substr(md5('commit' || d), 1, 12),
                          'branch', 'main') AS tags,
       jsonb_build_object('size', 's' || v) AS vars
FROM ch_p p, generate_series(0, p.nn - 1) d, generate_series(0, p.nv - 1) v;
CREATE UNIQUE INDEX ON ch_jobs (id);
ANALYZE ch_jobs;

INSERT INTO jobs (id, job_uuid, suite, vars, runs, tags, label, hosts_spec,
                  requested_by, created_at_us, state, ended_at_us)
SELECT j.id, j.job_uuid, 'nightly', j.vars, p.rounds, j.tags, 'nightly',
       'all', 'changes-history', j.night_us + j.v * p.nb * 5000000,
       'ended', j.night_us + (j.v + 1) * p.nb * 5000000
FROM ch_jobs j, ch_p p ORDER BY j.id;
SELECT setval('jobs_id_seq', (SELECT max(id) FROM jobs));

INSERT INTO job_hosts (job, host_id, state, queued_at_us, offered_at_us,
                       ended_at_us, updated_at_us)
SELECT j.id, h.id, 'done', j.night_us, j.night_us,
       j.night_us + 86400000000 / 2, j.night_us + 86400000000 / 2
FROM ch_jobs j CROSS JOIN hosts h;

-- The planted steps: pair (b, v), its night, and how many hosts.
CREATE TEMP TABLE ch_steps AS
SELECT b, v, p.nn * 3 / 4 + (b + v) % greatest(p.nn / 5, 1) AS night,
       5 + b % 6 AS nhosts, (b + v) % 4 = 0 AS acked
FROM ch_p p, generate_series(0, p.nb - 1) b, generate_series(0, p.nv - 1) v
WHERE (7 * b + 13 * v) % 80 = 0;

-- Every run, in the order a real collector would have stored them.
-- Each host runs its night's jobs one after the other, a benchmark every
-- 5 s.
CREATE TEMP TABLE ch_runs AS
SELECT i AS id, (i - 1) / (p.nb * p.nh * p.nv) AS d,
       (i - 1) / (p.nb * p.nh) % p.nv AS v, (i - 1) / p.nb % p.nh AS h,
       (i - 1) % p.nb AS b
FROM ch_p p, generate_series(1, p.nb * p.nh * p.nv * p.nn) i;

INSERT INTO runs (id, run_uuid, host_id, benchmark_id, job_id, label, tags,
                  runs, warmup, started_at_us, environment, status, reason,
                  batches, samples, ended_at_us, vars)
SELECT r.id, 'b9r' || lpad(to_hex(r.id), 13, '0'), r.h + 1, r.b + 1,
       j.job_uuid, 'nightly', j.tags, p.rounds, 0,
       j.night_us + (r.v * p.nb + r.b) * 5000000 + r.h * 1000,
       r.h * 2 + 1 + (r.d >= p.nn / 2)::int, 'complete', '',
       (p.rounds * 3 + 511) / 512, p.rounds * 3,
       j.night_us + (r.v * p.nb + r.b) * 5000000 + r.h * 1000 + 4000000,
       j.vars
FROM ch_runs r JOIN ch_jobs j ON j.id = r.d * (SELECT nv FROM ch_p) + r.v + 1,
     ch_p p
ORDER BY r.id;
SELECT setval('runs_id_seq', (SELECT max(id) FROM runs));

INSERT INTO arms (run, idx, name, subject, argv, version_output)
SELECT r.id, a, CASE a WHEN 0 THEN 'new' ELSE 'old' END, a = 0,
       CASE a WHEN 0 THEN ARRAY['./prog-new'] ELSE ARRAY['./prog-old'] END,
       'prog 1.0'
FROM ch_runs r, generate_series(0, 1) a
ORDER BY r.id, a;

-- Per run: each arm's median; the subject 10 % slower after a step.
CREATE TEMP TABLE ch_med AS
SELECT r.id, r.h,
       base * (1 + 0.02 * (pg_temp.ch_u(r.id, 1) + pg_temp.ch_u(r.id, 2)
                           + pg_temp.ch_u(r.id, 3) - 1.5))
            * CASE WHEN s.b IS NOT NULL AND r.h < s.nhosts
                        AND r.d >= s.night THEN 1.10 ELSE 1.0 END AS s_med,
       base * (1 + 0.02 * (pg_temp.ch_u(r.id, 4) + pg_temp.ch_u(r.id, 5)
                           + pg_temp.ch_u(r.id, 6) - 1.5)) AS o_med
FROM ch_runs r
LEFT JOIN ch_steps s ON s.b = r.b AND s.v = r.v,
LATERAL (SELECT (1000.0 + r.b * 37 + r.h * 3) * (1 + r.v * 0.5) AS base) x;

INSERT INTO run_summaries (run, arm, n, min, q25, median, q75, max, iqr,
                           mean, errors)
SELECT m.id, a, p.rounds, med * 0.97, med * 0.99, med, med * 1.01,
       med * 1.06, med * 0.02, med * 1.004, 0
FROM ch_med m, ch_p p, generate_series(0, 1) a,
LATERAL (SELECT CASE a WHEN 0 THEN m.s_med ELSE m.o_med END AS med) x
ORDER BY m.id, a;

INSERT INTO verdicts (run, host_id, subject_arm, other_arm, other_name,
                      outcome, ratio, best_ratio, tolerance, noise,
                      best_tolerance, floor_us, floor_is_default,
                      floor_samples, parity, diagnostics, extra_runs,
                      n_subject, n_other)
SELECT m.id, m.h + 1, 0, 1, 'old',
       CASE WHEN q > 1.03 THEN 'loss' WHEN q < 0.97 THEN 'win'
            ELSE 'parity' END,
       q, q, 0.02, 0.01, 0.02, 25.0 + m.h, false, 1000, 0.02, 0, 0,
       p.rounds, p.rounds
FROM ch_med m, ch_p p, LATERAL (SELECT m.s_med / m.o_med AS q) x
ORDER BY m.id;

-- The planted steps' change points, as co_detect stores them.
INSERT INTO change_points (benchmark_id, host_id, vars, subject, other,
                           metric, before_run, after_run, before_value,
                           after_value, magnitude, p_value, outcome,
                           within_noise, regression, annotations,
                           detected_at_us, ack_note, acked_at_us)
SELECT s.b + 1, h + 1, jsonb_build_object('size', 's' || s.v), 'new', 'old',
       metric, before_run, after_run, bv, bv * 1.10, 1.10, 1e-7, 'loss',
       false, true, '{}', ra.ended_at_us + 1000000,
       CASE WHEN s.acked THEN 'planted by changes_history.sql' END,
       CASE WHEN s.acked THEN ra.ended_at_us + 3600000000 END
FROM ch_steps s, ch_p p, generate_series(0, s.nhosts - 1) h,
     unnest(ARRAY['ratio', 'subject']) metric,
LATERAL (SELECT 1 + (((s.night - 1) * p.nv + s.v) * p.nh + h) * p.nb + s.b
                    AS before_run,
                1 + ((s.night * p.nv + s.v) * p.nh + h) * p.nb + s.b
                    AS after_run) ids
JOIN runs ra ON ra.id = ids.after_run,
LATERAL (SELECT CASE metric WHEN 'ratio' THEN 1.0
                ELSE (1000.0 + s.b * 37 + h * 3) * (1 + s.v * 0.5) END
                AS bv) x
ORDER BY s.b, s.v, h, metric;

-- The verdicts' series (migration 008), as the writer adds them.
INSERT INTO series (benchmark_id, host_id, vars, subject, other)
SELECT DISTINCT r.benchmark_id, r.host_id, r.vars, sa.name, v.other_name
FROM verdicts v JOIN runs r ON r.id = v.run
JOIN arms sa ON sa.run = v.run AND sa.idx = v.subject_arm
ON CONFLICT DO NOTHING;

SET session_replication_role = origin;
ANALYZE;
SELECT (SELECT count(*) FROM runs) AS runs,
       (SELECT count(*) FROM change_points) AS change_points;
