-- 017_quiet_calibration.sql -- quiet calibration runs, and the floor's
-- own trust (docs/collector.md "The floor"). Applied once by
-- co_db_migrate after 016. Never edit an applied migration.
--
-- A Calibration says whether its runs were quiet: taken by an idle agent
-- holding its machine's lock while the rest of the machine used under a
-- tenth of a CPU (docs/protocol.md, Calibration). Everything else (a
-- job's own calibration runs, an older agent's) is not. The floor pools
-- the host's last `--floor-window` runs and, when at least 100 of them
-- are quiet, those alone. The columns default to false, so every row
-- stored before stays as it was used.
ALTER TABLE calibrations ADD COLUMN quiet boolean NOT NULL DEFAULT false;
ALTER TABLE host_calibration ADD COLUMN quiet boolean NOT NULL DEFAULT false;

-- What a floor pooled: quiet runs alone or not, and the oldest and
-- newest instants of the runs it used (agent clocks, Unix us). On the
-- host's row (parity hosts) and per run (floors, the verdicts' floor).
ALTER TABLE hosts
    ADD COLUMN floor_quiet boolean,
    ADD COLUMN floor_oldest_us bigint,
    ADD COLUMN floor_newest_us bigint;
ALTER TABLE floors
    ADD COLUMN quiet boolean,
    ADD COLUMN oldest_us bigint,
    ADD COLUMN newest_us bigint;
