-- 010_refusals.sql -- what the collector refused for good, so that the
-- messages that depend on it are answered (Error 14, docs/protocol.md
-- section 4) instead of waited for. Applied once by co_db_migrate after
-- 009. Never edit an applied migration.

-- One row per refused RunStart (batch_seq -1) or SampleBatch of a host,
-- written by the writer in the transaction that answers the refusal.
-- Only runs no host stored are remembered for a RunStart ("belongs to
-- another host" is found in runs itself). A run or batch stored later
-- under the same key wins: the look-ups below ask runs and batches
-- first. reason is the Error's text (co_db keeps it short).
CREATE TABLE refusals (
    host_id    bigint NOT NULL REFERENCES hosts(id),
    run_uuid   text NOT NULL,
    batch_seq  bigint NOT NULL,          -- -1: the RunStart itself
    reason     text NOT NULL,
    refused_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host_id, run_uuid, batch_seq)
);
