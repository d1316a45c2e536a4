-- 001_initial.sql -- the first schema. Applied once, in one transaction,
-- by co_db_migrate; schema_version records it. Never edit an applied
-- migration: add 002_*.sql instead.

-- One row per agent, keyed by its authenticated CURVE public key (Z85).
CREATE TABLE hosts (
    id            bigserial PRIMARY KEY,
    public_key    text NOT NULL UNIQUE,
    name          text NOT NULL,          -- claimed in Hello
    agent_version text NOT NULL DEFAULT '',
    key_claimed   text NOT NULL DEFAULT '',  -- Hello.key_fingerprint
    boot_id       text NOT NULL DEFAULT '',
    tags          jsonb NOT NULL DEFAULT '{}',
    online        boolean NOT NULL DEFAULT false,
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_hello    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now()
);

-- Environment snapshots: a new row only when the text changed.
CREATE TABLE environments (
    id          bigserial PRIMARY KEY,
    host_id     bigint NOT NULL REFERENCES hosts(id),
    digest      text NOT NULL,            -- md5 of environment_json
    environment_json text NOT NULL,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (host_id, digest)
);

-- The suites a host said it can run (Hello.suites).
CREATE TABLE suites (
    id          bigserial PRIMARY KEY,
    host_id     bigint NOT NULL REFERENCES hosts(id),
    name        text NOT NULL,
    digest      text NOT NULL,
    benchmarks  text[] NOT NULL DEFAULT '{}',
    first_seen  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (host_id, name, digest)
);

CREATE TABLE benchmarks (
    id          bigserial PRIMARY KEY,
    suite       text NOT NULL,
    name        text NOT NULL,
    UNIQUE (suite, name)
);

-- Calibration messages (natural key calibration_id) and their samples.
CREATE TABLE calibrations (
    id             bigserial PRIMARY KEY,
    calibration_id text NOT NULL UNIQUE,
    host_id        bigint NOT NULL REFERENCES hosts(id),
    taken_at_us    bigint NOT NULL,
    n_samples      integer NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE calibration_samples (
    calibration bigint NOT NULL REFERENCES calibrations(id),
    host_id     bigint NOT NULL,
    idx         integer NOT NULL,
    taken_at_us bigint NOT NULL,
    wall_us     double precision NOT NULL,
    PRIMARY KEY (calibration, idx)
);
CREATE INDEX calibration_samples_host ON calibration_samples (host_id, taken_at_us);

-- Runs: natural key run_uuid (RunStart.run_id). status is NULL until
-- RunEnd is stored.
CREATE TABLE runs (
    id            bigserial PRIMARY KEY,
    run_uuid      text NOT NULL UNIQUE,
    host_id       bigint NOT NULL REFERENCES hosts(id),
    benchmark_id  bigint NOT NULL REFERENCES benchmarks(id),
    job_id        text NOT NULL DEFAULT '',
    label         text NOT NULL DEFAULT '',
    tags          jsonb NOT NULL DEFAULT '{}',
    runs          integer NOT NULL,
    warmup        integer NOT NULL,
    started_at_us bigint NOT NULL,
    environment   bigint REFERENCES environments(id),
    status        text,                   -- complete, failed, incomplete, cancelled
    reason        text,
    batches       integer,                -- RunEnd.batches
    samples       bigint,                 -- RunEnd.samples
    ended_at_us   bigint,
    received_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE arms (
    run            bigint NOT NULL REFERENCES runs(id),
    idx            integer NOT NULL,
    name           text NOT NULL,
    subject        boolean NOT NULL,
    argv           text[] NOT NULL DEFAULT '{}',
    shell          text NOT NULL DEFAULT '',
    version_output text NOT NULL DEFAULT '',
    PRIMARY KEY (run, idx)
);

-- One row per stored SampleBatch: the idempotency record.
CREATE TABLE batches (
    run         bigint NOT NULL REFERENCES runs(id),
    batch_seq   integer NOT NULL,
    n_samples   integer NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run, batch_seq)
);

-- Every field the harness records (parity.Sample). No unique index: the
-- batches row written in the same transaction makes a batch unique, and
-- an index per sample would halve ingest.
CREATE TABLE samples (
    run           bigint NOT NULL,
    batch_seq     integer NOT NULL,
    idx           integer NOT NULL,       -- place in the batch
    kind          smallint NOT NULL,      -- 0 measured, 1 warmup, 2 calibration, 3 error
    arm           integer NOT NULL,
    round         integer NOT NULL,
    position      integer NOT NULL,
    wall_us       double precision NOT NULL,
    user_us       double precision NOT NULL,
    sys_us        double precision NOT NULL,
    maxrss_kb     bigint NOT NULL,
    exit_status   integer NOT NULL,
    term_signal   integer NOT NULL,
    cpu           integer NOT NULL,
    start_unix_us bigint NOT NULL,
    error         text NOT NULL DEFAULT ''
);
CREATE INDEX samples_run ON samples (run);

-- One verdict per (run, other arm), against the run's subject arm, with
-- everything needed to recompute it.
CREATE TABLE verdicts (
    id               bigserial PRIMARY KEY,
    run              bigint NOT NULL REFERENCES runs(id),
    host_id          bigint NOT NULL REFERENCES hosts(id),
    subject_arm      integer NOT NULL,
    other_arm        integer NOT NULL,
    other_name       text NOT NULL,
    outcome          text,                -- NULL when error is set
    ratio            double precision,
    best_ratio       double precision,
    tolerance        double precision,
    noise            double precision,
    best_tolerance   double precision,
    floor_us         double precision NOT NULL,
    floor_is_default boolean NOT NULL,
    floor_samples    integer NOT NULL,    -- calibration samples it came from
    parity           double precision NOT NULL,
    diagnostics      integer NOT NULL DEFAULT 0,
    extra_runs       integer NOT NULL DEFAULT 0,
    n_subject        integer NOT NULL,
    n_other          integer NOT NULL,
    verdict_json     text,
    error            text,
    computed_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run, other_arm)
);
