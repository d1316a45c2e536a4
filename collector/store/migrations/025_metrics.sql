-- 025_metrics.sql -- CPU time and peak memory judged like wall time
-- (shared/spec/verdict-rule.md "Other metrics"; docs/verdict.md
-- "Metrics"; docs/collector.md "Metrics"). Applied once by co_db_migrate
-- after 024. Never edit an applied migration.
--
-- Every row before this one is wall time's: the new columns' defaults
-- say so, and nullable columns without a default are added without
-- rewriting a row.

-- The other metrics' values of each calibration no-op run: cpu_us is
-- ru_utime + ru_stime, task_clock_us the task clock (NULL where it was
-- not counted), peak_rss_kb ru_maxrss. NULL on every older row: a
-- metric's floor pools the rows of the window that have its value.
ALTER TABLE host_calibration ADD COLUMN cpu_us double precision,
                             ADD COLUMN task_clock_us double precision,
                             ADD COLUMN peak_rss_kb double precision;
ALTER TABLE calibration_samples ADD COLUMN cpu_us double precision,
                                ADD COLUMN task_clock_us double precision,
                                ADD COLUMN peak_rss_kb double precision;

-- The metrics a run's benchmark is judged and tracked on (RunStart's
-- metrics; a suite's `metrics:`).
ALTER TABLE runs ADD COLUMN metrics text[] NOT NULL DEFAULT '{wall}';

-- A verdict's metric, and where its values came from (cpu: task_clock
-- or rusage). floor_us holds the floor in the metric's unit (KiB for
-- peak_rss). One verdict per (run, other arm, metric).
ALTER TABLE verdicts ADD COLUMN metric text NOT NULL DEFAULT 'wall',
                     ADD COLUMN metric_source text;
ALTER TABLE verdicts DROP CONSTRAINT verdicts_run_other_arm_key,
    ADD CONSTRAINT verdicts_run_other_arm_metric_key
        UNIQUE (run, other_arm, metric);

-- A host's current floor of each other metric (wall time's stays on its
-- hosts row): refreshed with each Calibration and at each RunEnd that
-- judged the metric, never by an older window (at_us, as floor_at_us).
CREATE TABLE host_floors (
    host_id     bigint NOT NULL REFERENCES hosts(id),
    metric      text NOT NULL,
    source      text,                    -- cpu: task_clock or rusage
    floor       double precision NOT NULL,
    is_default  boolean NOT NULL,
    samples     integer NOT NULL,
    resolution  double precision NOT NULL,
    at_us       bigint NOT NULL,
    PRIMARY KEY (host_id, metric)
);
