-- 026_metric_series.sql -- history per metric (docs/regressions.md
-- "Metrics"): each tracked metric of a run has its arms' summaries, and
-- detection a window and change points of its own. Applied once by
-- co_db_migrate after 025. Never edit an applied migration.
--
-- Every row before this one is wall time's (the defaults say so).

-- A run's per-arm summary of each metric it tracks (the MEASURED
-- samples' values of it, as co_verdicts reads them).
ALTER TABLE run_summaries ADD COLUMN metric text NOT NULL DEFAULT 'wall';
ALTER TABLE run_summaries DROP CONSTRAINT run_summaries_pkey,
    ADD PRIMARY KEY (run, arm, metric);

-- Detection's kept window of each series and metric.
ALTER TABLE detect_windows ADD COLUMN metric text NOT NULL DEFAULT 'wall';
ALTER TABLE detect_windows DROP CONSTRAINT detect_windows_pkey,
    ADD PRIMARY KEY (benchmark_id, host_id, vars, subject, other, metric);

-- A change point's quantity: the metric its series measures (wall, cpu,
-- peak_rss). Its column `metric` (007) names which curve of the series
-- stepped: ratio, subject or other.
ALTER TABLE change_points ADD COLUMN quantity text NOT NULL DEFAULT 'wall';
DO $$
DECLARE c text;
BEGIN
    SELECT conname INTO c FROM pg_constraint
     WHERE conrelid = 'change_points'::regclass AND contype = 'u';
    EXECUTE format('ALTER TABLE change_points DROP CONSTRAINT %I', c);
END $$;
ALTER TABLE change_points ADD CONSTRAINT change_points_step_key
    UNIQUE (benchmark_id, host_id, vars, subject, other, quantity, metric,
            after_run);
