-- 012_suite_digests.sql -- which version of its suite each host of a job
-- ran, so that `parity verdicts` can flag hosts that ran another one
-- (docs/protocol.md 10.2). Applied once by co_db_migrate after 011.
-- Never edit an applied migration.

-- The SHA-256 (hex) of the suite file: set when the job is offered from
-- the host's latest Hello (host_suites.digest), then replaced by the
-- agent's JobStatus "running" (suite_digest: the bytes it loaded).
-- '' when neither said (rows from before this migration, agents that do
-- not send it).
ALTER TABLE job_hosts ADD COLUMN suite_digest text NOT NULL DEFAULT '';
