-- 014_hosts_boot.sql -- an index on hosts.boot_id (`parity
-- hosts` with 1,000 hosts <= 100 ms). Applied once by co_db_migrate
-- after 013. Never edit an applied migration.
--
-- `hosts` lists, for every host, the other hosts on the same machine
-- (same boot id, 009). Without an index that is a scan of hosts per
-- host: 1,000 scans of a table that mark_seen rewrites every second, 230
-- of the answer's 270 ms at 1,000 hosts (fleet_load.sh, 2026-12-03).
CREATE INDEX IF NOT EXISTS hosts_boot ON hosts (boot_id);
