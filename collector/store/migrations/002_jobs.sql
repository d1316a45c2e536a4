-- 002_jobs.sql -- jobs across the fleet (co_jobs) and what each host said
-- it can run. Applied once by co_db_migrate after 001. Never edit an
-- applied migration: add 003_*.sql instead.

-- One row per `parity run`. job_uuid is what users type (parity cancel
-- JOB); state is 'active' until every host is final, then 'ended', or
-- 'cancelled'. tags and vars are {"key": "value"} objects; tags are
-- copied into every run the job asks for (runs.tags).
CREATE TABLE jobs (
    id              bigserial PRIMARY KEY,
    job_uuid        text NOT NULL UNIQUE,
    suite           text NOT NULL,
    vars            jsonb NOT NULL DEFAULT '{}',
    runs            integer NOT NULL DEFAULT 0,   -- 0: the suite's own
    only_benchmarks text[] NOT NULL DEFAULT '{}', -- empty: all
    tags            jsonb NOT NULL DEFAULT '{}',
    label           text NOT NULL DEFAULT '',
    hosts_spec      text NOT NULL DEFAULT '',     -- --hosts as asked
    requested_by    text NOT NULL,                -- admin key (Z85)
    created_at_us   bigint NOT NULL,
    expires_at_us   bigint NOT NULL DEFAULT 0,    -- 0: never
    state           text NOT NULL DEFAULT 'active',
    ended_at_us     bigint
);
CREATE INDEX jobs_active ON jobs (state) WHERE state = 'active';

-- One row per (job, host). state: queued (not offered yet), running
-- (offered; progress below), and the final states done, failed, lost,
-- cancelled, expired. An agent has at most one running row at a time.
CREATE TABLE job_hosts (
    job            bigint NOT NULL REFERENCES jobs(id),
    host_id        bigint NOT NULL REFERENCES hosts(id),
    state          text NOT NULL,
    reason         text NOT NULL DEFAULT '',
    run_id         text NOT NULL DEFAULT '',      -- last JobStatus.run_id
    benchmark      text NOT NULL DEFAULT '',
    round          integer NOT NULL DEFAULT 0,
    rounds         integer NOT NULL DEFAULT 0,
    queued_at_us   bigint NOT NULL,
    offered_at_us  bigint,
    ended_at_us    bigint,
    updated_at_us  bigint NOT NULL,
    PRIMARY KEY (job, host_id)
);
CREATE INDEX job_hosts_host ON job_hosts (host_id, state);

-- The suites a host listed in its latest Hello (001's suites table keeps
-- every suite ever seen; a job goes only to hosts that list it now).
CREATE TABLE host_suites (
    host_id     bigint NOT NULL REFERENCES hosts(id),
    name        text NOT NULL,
    digest      text NOT NULL DEFAULT '',
    benchmarks  text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (host_id, name)
);
