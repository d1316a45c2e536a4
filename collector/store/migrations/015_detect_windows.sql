-- 015_detect_windows.sql -- each series' detection window, kept as runs
-- are stored (the target: "incremental detection adds <= 5 ms to a
-- RunEnd"). co_detect read the newest 200 runs of a series at every
-- RunEnd (runs, arms and two run_summaries rows each, by index): 600 and
-- more scattered pages, whose reads were the p99 (6 to 7 ms). With this
-- row it reads one row and the new run's own, just written, summaries.
-- Applied once by co_db_migrate after 014. Never edit an applied
-- migration.
--
-- Written and read by co_detect only (the detection thread): a cache.
-- A series without a row, or whose row does not end just before the new
-- run (a run stored in between, one arriving out of order, a different
-- window), is read in full as before and its row rewritten; so the table
-- may be emptied at any time. Keyed as change_points' series (other ''
-- for a run of one arm).
CREATE TABLE detect_windows (
    benchmark_id       bigint NOT NULL REFERENCES benchmarks(id),
    host_id            bigint NOT NULL REFERENCES hosts(id),
    vars               jsonb NOT NULL,
    subject            text NOT NULL,
    other              text NOT NULL,
    -- The newest run in points, and its start: a new run of the series
    -- extends the window when it started later and no other complete run
    -- of the series started in between.
    newest_run         bigint NOT NULL,
    newest_started_us  bigint NOT NULL,
    -- co_detect.c s_pack: a version byte, the window length (4 bytes),
    -- then per run oldest first its id and both arms' median, min, q25,
    -- q75, max and n, 8 bytes each, big-endian (about 21 KB at 200 runs).
    points             bytea NOT NULL,
    PRIMARY KEY (benchmark_id, host_id, vars, subject, other)
);
-- Doubles do not compress: store the value out of line as it is rather
-- than try pglz on every RunEnd.
ALTER TABLE detect_windows ALTER COLUMN points SET STORAGE EXTERNAL;
