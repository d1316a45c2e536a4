-- 013_counters.sql -- hardware counters beside wall time
-- (docs/protocol.md SampleBatch): each sample's instructions, cycles and
-- task-clock of the measured command and its children, user space only.
-- NULL where the host did not count them (no PMU in a VM, a
-- perf_event_paranoid setting, an older agent). Applied once by
-- co_db_migrate after 012. Never edit an applied migration.
--
-- Nullable columns without a default: PostgreSQL adds them to samples
-- and every partition without rewriting a row.
ALTER TABLE samples ADD COLUMN instructions bigint,
                    ADD COLUMN cycles bigint,
                    ADD COLUMN task_clock_ns bigint;
