-- 009_enrollment.sql -- agents' keys decided in the database
-- (docs/collector.md "Enrollment"). Applied once by co_db_migrate after
-- 008. The database, not a collector's memory, is the truth: several
-- collectors may share it, and each reads the changes (version below).

-- One row per key an operator has to decide on, or has decided on. A key
-- in a collector's --allow or --admin directory needs no row: it is
-- approved; a row of it that says rejected or revoked wins over the file.
-- state: pending (its agent said Hello; it may say nothing else),
-- approved, rejected (never approved), revoked (approved before).
CREATE SEQUENCE host_keys_version;
CREATE TABLE host_keys (
    public_key    text PRIMARY KEY,               -- Z85, as hosts.public_key
    fingerprint   text NOT NULL UNIQUE,           -- pw_key: SHA256:base64
    state         text NOT NULL CHECK (state IN ('pending', 'approved',
                                                 'rejected', 'revoked')),
    name          text NOT NULL DEFAULT '',       -- claimed in its last Hello
    agent_version text NOT NULL DEFAULT '',
    address       text NOT NULL DEFAULT '',       -- peer address of that Hello
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now(),
    decided_at    timestamptz,
    decided_by    text NOT NULL DEFAULT '',       -- the admin key (Z85)
    -- Taken from the sequence at every change of state: a collector
    -- reads the rows above the highest version it has seen.
    version       bigint NOT NULL DEFAULT nextval('host_keys_version')
);
CREATE INDEX host_keys_by_version ON host_keys (version);
CREATE INDEX host_keys_pending ON host_keys (state) WHERE state = 'pending';
