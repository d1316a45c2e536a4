-- 006_fleet_storage.sql -- storage that stays fast as history grows
-- (docs/collector.md "Storage and retention"). Applied
-- once, in one transaction, by co_db_migrate after 005. Every row of
-- 001..005's tables is kept. Never edit an applied migration.

-- 1. A host's calibration samples in one place, found by an index scan:
-- the floor at RunEnd was a UNION over calibration_samples and every
-- CALIBRATION sample in `samples` (a scan of the whole table, ~250 ms a
-- host at 1.8 M samples). co_db fills it on ingest from Calibration
-- messages (taken_at_us of the message) and from the CALIBRATION samples
-- of batches with wall_us > 0 (their start_unix_us): the same samples the
-- old UNION read. No foreign key: a check per row would slow the ingest
-- COPY, and co_db writes only hosts it knows (as for samples).
CREATE TABLE host_calibration (
    host_id     bigint NOT NULL,
    taken_at_us bigint NOT NULL,
    wall_us     double precision NOT NULL
);
INSERT INTO host_calibration (host_id, taken_at_us, wall_us)
    SELECT host_id, taken_at_us, wall_us FROM calibration_samples
    UNION ALL
    SELECT r.host_id, s.start_unix_us, s.wall_us
      FROM samples s JOIN runs r ON r.id = s.run
     WHERE s.kind = 2 AND s.wall_us > 0;
CREATE INDEX host_calibration_host ON host_calibration (host_id, taken_at_us);

-- 2. The host's current floor on its row, so that `parity hosts` is one
-- query for every host. Written at RunEnd (the floor its verdicts used)
-- and on each Calibration message; floor_at_us is the instant the
-- window ends at (samples taken up to then), and an older one never
-- overwrites a newer one. Backfilled here as vd_floor would compute it
-- over the default window of 1,000 samples ending now: q(0.9) - q(0.1)
-- (type 7, which percentile_cont is) of at least 100 samples, else the
-- default 25 us.
ALTER TABLE hosts
    ADD COLUMN floor_us double precision,
    ADD COLUMN floor_is_default boolean,
    ADD COLUMN floor_samples integer,
    ADD COLUMN floor_at_us bigint;
UPDATE hosts h SET (floor_us, floor_is_default, floor_samples, floor_at_us) =
    (SELECT CASE WHEN count(*) >= 100
                 THEN percentile_cont(0.9) WITHIN GROUP (ORDER BY w.wall_us)
                      - percentile_cont(0.1) WITHIN GROUP (ORDER BY w.wall_us)
                 ELSE 25.0 END,
            count(*) < 100, count(*),
            (extract(epoch FROM now()) * 1000000)::bigint
       FROM (SELECT c.wall_us FROM host_calibration c
              WHERE c.host_id = h.id
                AND c.taken_at_us <= (extract(epoch FROM now()) * 1000000)::bigint
              ORDER BY c.taken_at_us DESC LIMIT 1000) w);
-- `hosts` reads each host's newest environment and calibration.
CREATE INDEX environments_host ON environments (host_id, id);
CREATE INDEX calibrations_host ON calibrations (host_id, taken_at_us);

-- 3. Per-run summaries, kept forever (retention drops samples, never
-- these): per arm, the MEASURED samples with wall_us > 0 (what `report`
-- summarised from samples before): n, then min, type-7 quantiles, max,
-- iqr = q75 - q25 and mean = (sum in ascending order) / n, exactly as
-- vd_summarize computes them; NULL when n is 0 or above vd's limit of
-- 2^20 samples (vd_summarize refuses those). errors: the arm's ERROR
-- samples. co_db writes them at RunEnd in the verdicts' transaction.
CREATE TABLE run_summaries (
    run     bigint NOT NULL REFERENCES runs(id),
    arm     integer NOT NULL,
    n       bigint NOT NULL,
    min     double precision,
    q25     double precision,
    median  double precision,
    q75     double precision,
    max     double precision,
    iqr     double precision,
    mean    double precision,
    errors  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (run, arm)
);
-- Every run, ended or not (a run still going gets its final summary at
-- its RunEnd). The mean's sum skips values from 1e290 up so that it can
-- never overflow (PostgreSQL raises an error where C gives inf); an arm
-- with such a sample (no real run has one) sums scaled parts instead,
-- as vd does when the plain sum is not finite.
INSERT INTO run_summaries (run, arm, n, min, q25, median, q75, max, iqr,
                           mean, errors)
SELECT a.run, a.idx, COALESCE(m.n, 0),
       m.min, m.q25, m.median, m.q75, m.max, m.q75 - m.q25,
       CASE WHEN m.min IS NULL THEN NULL
            WHEN m.big = 0 THEN m.small_sum / m.n::float8
            ELSE m.parts_sum * 1e290::float8 / m.n::float8 END,
       COALESCE(e.errors, 0)
  FROM arms a
  LEFT JOIN (
    SELECT run, arm, count(*) AS n,
           CASE WHEN count(*) <= 1048576 THEN min(wall_us) END AS min,
           CASE WHEN count(*) <= 1048576 THEN percentile_cont(0.25)
                WITHIN GROUP (ORDER BY wall_us) END AS q25,
           CASE WHEN count(*) <= 1048576 THEN percentile_cont(0.5)
                WITHIN GROUP (ORDER BY wall_us) END AS median,
           CASE WHEN count(*) <= 1048576 THEN percentile_cont(0.75)
                WITHIN GROUP (ORDER BY wall_us) END AS q75,
           CASE WHEN count(*) <= 1048576 THEN max(wall_us) END AS max,
           count(*) FILTER (WHERE wall_us >= 1e290::float8) AS big,
           sum(wall_us ORDER BY wall_us) FILTER (WHERE wall_us < 1e290::float8)
               AS small_sum,
           sum(wall_us / 1e290::float8 ORDER BY wall_us) AS parts_sum
      FROM samples WHERE kind = 0 AND wall_us > 0
     GROUP BY run, arm) m ON m.run = a.run AND m.arm = a.idx
  LEFT JOIN (
    SELECT run, arm, count(*) AS errors FROM samples WHERE kind = 3
     GROUP BY run, arm) e ON e.run = a.run AND e.arm = a.idx;

-- 4. samples partitioned by month of start_unix_us (UTC), so that
-- retention drops whole partitions and a run's read prunes to the months
-- since it started. Rows outside every partition made (an agent clock at
-- 0 or in year 3000) land in samples_default, so ingest never fails.
-- co_db_partitions_ensure makes the months ahead; names are
-- samples_pYYYYMM. The old table's rows all move; its name is reused.
ALTER TABLE samples RENAME TO samples_unpartitioned;
DROP INDEX samples_run_brin;
CREATE TABLE samples (LIKE samples_unpartitioned INCLUDING DEFAULTS
                      INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (start_unix_us);
CREATE TABLE samples_default PARTITION OF samples DEFAULT;
-- A partition for each month that holds rows from 2000 up to a year
-- ahead (further ones stay in the default), and for this month and the
-- next two.
DO $$
DECLARE
    m timestamp;
BEGIN
    FOR m IN
        SELECT DISTINCT date_trunc('month', to_timestamp(start_unix_us
                        / 1000000.0) AT TIME ZONE 'UTC')
          FROM samples_unpartitioned
         WHERE start_unix_us >= 946684800000000   -- 2000-01-01
           AND start_unix_us < (extract(epoch FROM now() + interval
                                '1 year') * 1000000)::bigint
        UNION
        SELECT date_trunc('month', now() AT TIME ZONE 'UTC')
               + k * interval '1 month' FROM generate_series(0, 2) k
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF samples FOR VALUES '
                       'FROM (%s) TO (%s)', 'samples_p' || to_char(m, 'YYYYMM'),
                       (extract(epoch FROM m) * 1000000)::bigint,
                       (extract(epoch FROM m + interval '1 month')
                        * 1000000)::bigint);
    END LOOP;
END
$$;
INSERT INTO samples SELECT * FROM samples_unpartitioned;
DROP TABLE samples_unpartitioned;
-- One BRIN index per partition (made for every later partition too).
-- autosummarize: autovacuum summarises each new block range as it
-- fills, so reading the newest run no longer rechecks an unsummarised
-- tail (~480 ms at 1.8 M rows before, 4 ms after a VACUUM).
CREATE INDEX samples_run_brin ON samples USING brin (run)
    WITH (pages_per_range = 16, autosummarize = on);
