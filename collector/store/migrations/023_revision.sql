-- 023_revision.sql -- the revision of a run (docs/suites.md "Revision"):
-- the value of the suite's `revision:` variable, which picks the version
-- under test. It is no part of the series key: runs.vars holds the job's
-- variables less that one, so that the runs of c28 .. c46 are one series
-- whose change points say where the step is. Applied once by
-- co_db_migrate after 022. Never edit an applied migration.

-- '' for a run whose suite names no revision variable, and for the rows
-- stored before this migration (their vars keep every variable).
ALTER TABLE runs ADD COLUMN revision text NOT NULL DEFAULT '';

-- The revision variable of each suite a host lists (Hello's
-- SuiteInfo.revision); '' when the suite names none.
ALTER TABLE host_suites ADD COLUMN revision text NOT NULL DEFAULT '';

-- Advice given once per suite (co_jobs_create): kind 'revision' is "the
-- jobs of this suite differ in one variable alone; name it revision:".
CREATE TABLE suite_warnings (
    suite         text NOT NULL,
    kind          text NOT NULL,
    warned_at_us  bigint NOT NULL,
    PRIMARY KEY (suite, kind)
);

-- A suite's newest jobs, for that advice.
CREATE INDEX jobs_suite ON jobs (suite, id);
