-- 022_bisects.sql -- bisects across the fleet (co_bisect, co_bisector;
-- docs/bisect.md). Applied once by co_db_migrate after 021. Never edit an
-- applied migration.
--
-- A bisect searches commits[] (the good end first, the bad end last) for
-- the commit where one benchmark's subject arm changed, on hosts[] (host
-- names). Every measurement is a job (jobs, job_hosts) tagged
-- bisect=ID and commit=SHA; bisect_steps records which job measured which
-- point, at which try, and the fleet's call on it once judged. The search
-- itself is never stored: it is replayed from the steps' calls
-- (vd_bisect is deterministic), so a collector that restarts, or another
-- collector on the database, carries on where the last one stopped.
--
-- state: queued (another bisect of the suite holds one of its hosts),
-- running, done, failed (reason says why), cancelled. A collector drives
-- a bisect while it holds the lease (lease_owner until lease_until_us).
-- event is the change-point event (its id, co_events) the bisect was
-- started for, NULL when none matched.
CREATE TABLE bisects (
    id             bigserial PRIMARY KEY,
    suite          text NOT NULL,
    benchmark      text NOT NULL,
    commits        text[] NOT NULL,
    hosts          text[] NOT NULL,
    vars           jsonb NOT NULL DEFAULT '{}',
    runs           integer NOT NULL,
    parity         double precision NOT NULL,
    event          bigint,
    state          text NOT NULL DEFAULT 'queued' CHECK (state IN
                   ('queued', 'running', 'done', 'failed', 'cancelled')),
    reason         text NOT NULL DEFAULT '',
    result         jsonb,
    requested_by   text NOT NULL,
    created_at_us  bigint NOT NULL,
    started_at_us  bigint,
    ended_at_us    bigint,
    lease_owner    text NOT NULL DEFAULT '',
    lease_until_us bigint NOT NULL DEFAULT 0
);
CREATE INDEX bisects_live ON bisects (id) WHERE state IN ('queued', 'running');
CREATE INDEX bisects_event ON bisects (suite, benchmark, event);

-- One measurement: point (0 the good end, the last index the bad end),
-- for the judgement of midpoint mid (-1: the ends' check) at try (0 the
-- first look, k the k-th retry with more runs: a retry measures the
-- midpoint and its interval's ends again, judged on their own), rerun
-- (0, or a rerun on the hosts whose run did not complete), the job and
-- the runs it asked for. call is NULL until judged, and set on the
-- judged point's row: "ends" or "ends again" on the ends', else
-- vd_bisect_call_name's words; hosts has each host's judgement then.
CREATE TABLE bisect_steps (
    bisect        bigint NOT NULL REFERENCES bisects(id) ON DELETE CASCADE,
    seq           integer NOT NULL,
    point         integer NOT NULL,
    mid           integer NOT NULL,
    try           integer NOT NULL,
    rerun         integer NOT NULL DEFAULT 0,
    runs          integer NOT NULL,
    job_uuid      text NOT NULL,
    call          text,
    reason        text NOT NULL DEFAULT '',
    hosts         jsonb,
    created_at_us bigint NOT NULL,
    judged_at_us  bigint,
    PRIMARY KEY (bisect, seq)
);
