-- 004_history.sql -- indexes for the queries over time (co_history:
-- history, regressions, report). Applied once by co_db_migrate after
-- 003. Never edit an applied migration: add 005_*.sql instead.

-- history: one benchmark's runs, oldest to newest.
CREATE INDEX runs_benchmark ON runs (benchmark_id, started_at_us);
-- report and verdicts: a job's runs (runs.job_id is '' without a job).
CREATE INDEX runs_job ON runs (job_id) WHERE job_id <> '';
