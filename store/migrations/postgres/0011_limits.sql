-- How full a run's context was at its last model call (context_tokens) and
-- its model's window (context_window, 0 when unknown). Subscription usage
-- limits: what a bench's attempts wait for (benches.waiting, until
-- waiting_until). runs.account is the login a run used (its
-- config folder) and runs.limits the last state of each usage window the
-- run saw (JSON, NULL when it saw none). limits is the ledger: per
-- runtime, account and window, the newest state any run reported, so that
-- every process on the database sees the same; limit_samples keeps every
-- report, for the dashboard's chart of each window's use over time.

ALTER TABLE runs ADD COLUMN account TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN context_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN context_window BIGINT NOT NULL DEFAULT 0;
ALTER TABLE benches ADD COLUMN waiting TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE benches ADD COLUMN waiting_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN limits TEXT COLLATE "C";

CREATE TABLE limits (
    runtime     TEXT COLLATE "C" NOT NULL,
    account     TEXT COLLATE "C" NOT NULL,
    window_name TEXT COLLATE "C" NOT NULL,
    utilization DOUBLE PRECISION NOT NULL,
    status      TEXT COLLATE "C" NOT NULL,
    resets_at   BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    run_id      TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (runtime, account, window_name)
);

CREATE TABLE limit_samples (
    runtime     TEXT COLLATE "C" NOT NULL,
    account     TEXT COLLATE "C" NOT NULL,
    window_name TEXT COLLATE "C" NOT NULL,
    utilization DOUBLE PRECISION NOT NULL,
    status      TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL,
    run_id      TEXT COLLATE "C" NOT NULL
);
CREATE INDEX limit_samples_at ON limit_samples (at);
