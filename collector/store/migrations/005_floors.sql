-- 005_floors.sql -- every floor the collector computed: one row per run
-- end, the value its verdicts used, so a host's floor can be followed
-- over time without recomputing it. Never edit an applied migration.
CREATE TABLE floors (
    id            bigserial PRIMARY KEY,
    host_id       bigint NOT NULL REFERENCES hosts(id),
    run           bigint NOT NULL REFERENCES runs(id) UNIQUE,
    floor_us      double precision NOT NULL,
    is_default    boolean NOT NULL,    -- fewer than 100 calibration samples
    n_samples     integer NOT NULL,    -- calibration samples it came from
    window_size   integer NOT NULL,    -- --floor-window at the time
    until_us      bigint NOT NULL,     -- samples taken up to this instant
    computed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX floors_host ON floors (host_id, computed_at);
