-- 003_samples_brin.sql -- samples are found by run, and runs arrive in
-- increasing id order (a few at a time), so a BRIN index finds a run's
-- rows from a few block ranges at a fraction of a btree's cost on every
-- insert: ingest is the collector's hot path (docs/performance.md,
-- "Collector ingest").
DROP INDEX IF EXISTS samples_run;
CREATE INDEX samples_run_brin ON samples USING brin (run)
    WITH (pages_per_range = 16);
CREATE INDEX runs_host ON runs (host_id);
