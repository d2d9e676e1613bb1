-- The steps of an attempt at a multi-step Harbor task ([[steps]]): each
-- step's name, its agent's run, rewards, status and error, as a JSON array
-- in their order; NULL for an attempt of a task of one step, as for every
-- attempt recorded before.

ALTER TABLE bench_attempts ADD COLUMN steps TEXT;
