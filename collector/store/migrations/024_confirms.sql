-- 024_confirms.sql -- confirming a change-point event (co_confirm,
-- co_confirmer; docs/regressions.md "Confirm"). Applied once by
-- co_db_migrate after 023. Never edit an applied migration.
--
-- A confirm measures the revision before an event's step (before) and
-- the one after it (after) in one job on the event's hosts: the subject
-- at after, with before as its --against instance, interleaved. Each
-- host's verdict of one against the other says whether it sees the step
-- again; the event is confirmed when most of the hosts that ran the job
-- do, not reproduced otherwise.
--
-- members: the event's change points when it was asked (what `regressions`
-- shows the state on). revision: the suite's revision variable. notify:
-- started by --confirm for a new event, whose webhook notice waits for
-- the answer and carries it; event_json is that event as it was found.
-- state: queued (its job not made yet), running, confirmed,
-- "not reproduced", failed (reason says why). result: {"hosts": [{"host",
-- "state": "confirmed" | "not reproduced" | "not measured", "outcome",
-- "ratio", "tolerance", "reason"}], "confirmed", "measured"}. A collector
-- drives a confirm while it holds the lease, as bisects (022).
CREATE TABLE confirms (
    id             bigserial PRIMARY KEY,
    event          bigint NOT NULL,
    members        bigint[] NOT NULL,
    suite          text NOT NULL,
    benchmark      text NOT NULL,
    direction      text NOT NULL CHECK (direction IN ('slower', 'faster')),
    revision       text NOT NULL,
    before         text NOT NULL,
    after          text NOT NULL,
    vars           jsonb NOT NULL DEFAULT '{}',
    hosts          text[] NOT NULL,
    runs           integer,
    job_uuid       text,
    notify         boolean NOT NULL DEFAULT false,
    event_json     jsonb,
    state          text NOT NULL DEFAULT 'queued' CHECK (state IN
                   ('queued', 'running', 'confirmed', 'not reproduced',
                    'failed')),
    reason         text NOT NULL DEFAULT '',
    result         jsonb,
    requested_by   text NOT NULL,
    created_at_us  bigint NOT NULL,
    started_at_us  bigint,
    ended_at_us    bigint,
    lease_owner    text NOT NULL DEFAULT '',
    lease_until_us bigint NOT NULL DEFAULT 0
);
CREATE INDEX confirms_live ON confirms (id) WHERE state IN ('queued', 'running');
CREATE INDEX confirms_members ON confirms USING gin (members);
-- One automatic confirm an event: of several collectors on one database
-- (each with --confirm), the one whose INSERT lands starts it.
CREATE UNIQUE INDEX confirms_auto ON confirms (event) WHERE notify;
