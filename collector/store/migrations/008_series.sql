-- 008_series.sql -- every series that has a verdict, so that
-- `regressions` reads each series' newest runs through an index instead
-- of windowing every verdict in the history (17 s at 10,000 series x 200
-- runs with 007's query). Applied once by co_db_migrate after 007.

-- One row per (benchmark, host, variables, subject arm, other arm): the
-- writer adds it in the RunEnd statement that stores the run's verdicts
-- (co_db s_store_results); it is never updated. The series' runs are
-- found with runs_series below.
CREATE TABLE series (
    benchmark_id  bigint NOT NULL REFERENCES benchmarks(id),
    host_id       bigint NOT NULL REFERENCES hosts(id),
    vars          jsonb NOT NULL,
    subject       text NOT NULL,
    other         text NOT NULL,
    PRIMARY KEY (benchmark_id, host_id, vars, subject, other)
);
INSERT INTO series (benchmark_id, host_id, vars, subject, other)
SELECT DISTINCT r.benchmark_id, r.host_id, r.vars, sa.name, v.other_name
FROM verdicts v JOIN runs r ON r.id = v.run
JOIN arms sa ON sa.run = v.run AND sa.idx = v.subject_arm;

-- A series' newest runs, for `regressions` and for detection at RunEnd
-- (co_detect's window): the variables in the key, where 007's index
-- made a series with several variable sets walk all of them.
DROP INDEX runs_series;
CREATE INDEX runs_series ON runs (benchmark_id, host_id, vars, started_at_us);
