-- Per-attempt limits (--token-limit, --cost-limit, --max-turns).
--   runs.budget  the limits a run was given (JSON; NULL: none)
-- The turn limit's failure kind is now turn_limit, beside token_limit and
-- cost_limit: older runs and attempts say max_turns.

ALTER TABLE runs ADD COLUMN budget TEXT COLLATE "C";
UPDATE runs SET error_kind = 'turn_limit' WHERE error_kind = 'max_turns';
UPDATE bench_attempts SET failure_kind = 'turn_limit' WHERE failure_kind = 'max_turns';
