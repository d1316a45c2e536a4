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

-- The revision values a job's subjects run at beside its own (parity
-- run --against, docs/suites.md "Against"): [{"name", "value"}], each
-- an instance of every benchmark's subject arm in the same rounds.
ALTER TABLE jobs ADD COLUMN against jsonb NOT NULL DEFAULT '[]';

-- The revision value an --against instance of the subject ran at; NULL
-- for a suite's own arms. Its verdict (the subject against it) is the
-- job's own comparison of two revisions: stored and shown with the
-- run's, kept out of series and detection.
ALTER TABLE arms ADD COLUMN instance text;

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
