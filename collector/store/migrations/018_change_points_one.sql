-- 018_change_points_one.sql -- one change point per step of a series
-- (docs/regressions.md "What a change point is"). Applied once by
-- co_db_migrate after 017. Never edit an applied migration.
--
-- A step shows in the ratio and in the subject arm's own series at once;
-- co_detect now stores it once, under the metric that names it (ratio;
-- subject for a one-arm series; other when the other arm moved: the
-- environment changed), with each metric's magnitude where that metric
-- stepped at the same runs (NULL where it did not). Detection judges a
-- series again at each of its runs and updates the change point it finds
-- near (two runs either side) in place: its id and its ack stay, its
-- location, magnitudes and verdict follow the runs; updated_at_us says
-- when. Rows stored before keep their metric and have no magnitudes.
ALTER TABLE change_points ADD COLUMN ratio_magnitude double precision;
ALTER TABLE change_points ADD COLUMN subject_magnitude double precision;
ALTER TABLE change_points ADD COLUMN other_magnitude double precision;
ALTER TABLE change_points ADD COLUMN updated_at_us bigint;
