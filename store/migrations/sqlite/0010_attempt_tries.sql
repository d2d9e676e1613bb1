-- An attempt's tries (a task asked again after a failed check) and the
-- reward its verifier gave (Harbor tasks; NULL when the task gives none).

ALTER TABLE bench_attempts ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bench_attempts ADD COLUMN reward REAL;
