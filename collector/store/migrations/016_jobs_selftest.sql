-- 016_jobs_selftest.sql -- an index on the self-test jobs
-- (`parity hosts` with 1,000 hosts <= 100 ms). Applied once by
-- co_db_migrate after 015. Never edit an applied migration.
--
-- `hosts` shows each host's last A/A self-test (co_selftest.h): the
-- newest done job of suite parity-selftest (PW_SELFTEST_SUITE) on the
-- host. Without an index on the suite, the planner starts from a scan
-- of every job for each host: 25 of the answer's ~65 ms at 1,000 hosts and 370 jobs, growing
-- with every job ever made (a fleet making one a minute has half a
-- million in a year). Self-test jobs are few; this index finds them.
CREATE INDEX IF NOT EXISTS jobs_selftest ON jobs (id)
    WHERE suite = 'parity-selftest';
