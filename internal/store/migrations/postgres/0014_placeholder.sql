-- Placeholder for the steps branch's migration 0014, so that 0016 follows
-- without a gap on this branch: drop this file when merging (steps' own
-- 0014 takes its place).
SELECT 1;
