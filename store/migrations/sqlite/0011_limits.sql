-- How full a run's context was at its last model call (context_tokens) and
-- its model's window (context_window, 0 when unknown). Subscription usage
-- limits: what a bench's attempts wait for (benches.waiting, until
-- waiting_until). runs.account is the login a run used (its
-- config folder) and runs.limits the last state of each usage window the
-- run saw (JSON, NULL when it saw none). limits is the ledger: per
-- runtime, account and window, the newest state any run reported, so that
-- every process on the database sees the same; limit_samples keeps every
-- report, for the dashboard's chart of each window's use over time.

ALTER TABLE runs ADD COLUMN account TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN context_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN context_window INTEGER NOT NULL DEFAULT 0;
ALTER TABLE benches ADD COLUMN waiting TEXT NOT NULL DEFAULT '';
ALTER TABLE benches ADD COLUMN waiting_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN limits TEXT;

CREATE TABLE limits (
    runtime     TEXT    NOT NULL,
    account     TEXT    NOT NULL,
    window_name TEXT    NOT NULL,
    utilization REAL    NOT NULL,
    status      TEXT    NOT NULL,
    resets_at   INTEGER NOT NULL, -- unix nanoseconds, 0 when not said
    updated_at  INTEGER NOT NULL,
    run_id      TEXT    NOT NULL,
    PRIMARY KEY (runtime, account, window_name)
);

CREATE TABLE limit_samples (
    runtime     TEXT    NOT NULL,
    account     TEXT    NOT NULL,
    window_name TEXT    NOT NULL,
    utilization REAL    NOT NULL,
    status      TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    run_id      TEXT    NOT NULL
);
CREATE INDEX limit_samples_at ON limit_samples (at);
