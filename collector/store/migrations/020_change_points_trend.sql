-- 020_change_points_trend.sql -- a drift reported once, as a trend
-- (docs/regressions.md "What a change point is"). Applied once by
-- co_db_migrate after 019. Never edit an applied migration.
--
-- A staircase of small changes one way (vd_trend.h) is stored as one
-- change point: after_run where it began, before_value and after_value
-- the levels before it and now, magnitude their ratio (the total so
-- far), and trend_per_run its rate a run. NULL for a step.
ALTER TABLE change_points ADD COLUMN trend_per_run double precision;
