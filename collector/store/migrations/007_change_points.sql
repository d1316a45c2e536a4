-- 007_change_points.sql -- regressions over time: the series
-- a run belongs to, and the change points found in series as runs are
-- stored (co_detect). Applied once by co_db_migrate after 006. Never
-- edit an applied migration: add 008_*.sql instead.

-- A series is (benchmark, subject arm, other arm, host, variables): a
-- job run with --var lines=10 is not the series of lines=700000. The
-- variables are the job's (jobs.vars), copied at RunStart; {} for a run
-- without a job.
ALTER TABLE runs ADD COLUMN vars jsonb NOT NULL DEFAULT '{}';
UPDATE runs r SET vars = j.vars FROM jobs j
    WHERE j.job_uuid = r.job_id AND r.job_id <> '' AND j.vars <> '{}';
-- A series' newest runs, for detection at RunEnd and for `series`.
CREATE INDEX runs_series ON runs (benchmark_id, host_id, started_at_us);

-- One change point of one series' metric: 'ratio' (subject median /
-- other median), 'subject' or 'other' (that arm's per-run median).
-- after_run is the first run after the change, before_run the last run
-- before it: their tags are the commit range. outcome is the verdict
-- rule's (vd_compare of the runs after against the runs before, with
-- the host's floor); within_noise when that is parity. regression: the
-- change made the subject slower (ratio or subject median up, outcome
-- loss, not within noise). Acked change points are known: kept, listed
-- apart, no longer fail `parity regressions`.
CREATE TABLE change_points (
    id            bigserial PRIMARY KEY,
    benchmark_id  bigint NOT NULL REFERENCES benchmarks(id),
    host_id       bigint NOT NULL REFERENCES hosts(id),
    vars          jsonb NOT NULL DEFAULT '{}',
    subject       text NOT NULL,
    other         text NOT NULL,
    metric        text NOT NULL,
    before_run    bigint NOT NULL REFERENCES runs(id),
    after_run     bigint NOT NULL REFERENCES runs(id),
    before_value  double precision NOT NULL,
    after_value   double precision NOT NULL,
    magnitude     double precision NOT NULL,
    p_value       double precision NOT NULL,
    outcome       text NOT NULL,
    within_noise  boolean NOT NULL,
    regression    boolean NOT NULL,
    annotations   text[] NOT NULL DEFAULT '{}',
    detected_at_us bigint NOT NULL,
    ack_note      text,
    acked_at_us   bigint,
    UNIQUE (benchmark_id, host_id, vars, subject, other, metric, after_run)
);
CREATE INDEX change_points_open ON change_points (detected_at_us)
    WHERE acked_at_us IS NULL;
CREATE INDEX change_points_after ON change_points (after_run);
