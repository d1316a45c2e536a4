-- 011_collectors.sql -- several collectors on one database (docs/
-- operations.md, "Outgrowing one collector"). Applied once by
-- co_db_migrate after 010. Never edit an applied migration.

-- One row per collector that ever served this database, keyed by its
-- --name (default HOST:PORT of --bind). beat_at is written at every job
-- tick (each --heartbeat-ms); a collector whose beat is older than
-- ttl_ms is gone (killed, or cut off from the database), and so are the
-- connections of the hosts it held.
CREATE TABLE collectors (
    name        text PRIMARY KEY,
    pid         integer NOT NULL DEFAULT 0,
    started_at  timestamptz NOT NULL DEFAULT now(),
    beat_at     timestamptz NOT NULL DEFAULT now(),
    ttl_ms      integer NOT NULL DEFAULT 10000
);

-- Which collector holds a host's connection (NULL: none since this migration).
ALTER TABLE hosts ADD COLUMN collector text;

-- The one liveness rule every collector reads: a host is live when its
-- row says online and the collector holding it beats.
CREATE VIEW host_liveness AS
SELECT h.id AS host_id, h.collector,
       (h.online AND c.name IS NOT NULL AND
        c.beat_at + make_interval(secs => c.ttl_ms / 1000.0) > now())
       AS live
FROM hosts h LEFT JOIN collectors c ON c.name = h.collector;
