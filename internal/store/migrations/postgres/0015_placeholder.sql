-- Placeholder for the artifacts branch's migration 0015, so that 0016
-- follows without a gap on this branch: drop this file when merging
-- (artifacts' own 0015 takes its place).
SELECT 1;
