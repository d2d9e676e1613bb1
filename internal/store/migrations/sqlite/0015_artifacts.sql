-- attempt_artifacts: what a container task's attempt collected of its
-- containers (Harbor's artifacts and /logs/artifacts), one row per
-- collection (the attempt's, or one step's): the files as a tar archive in
-- blobs, and the manifest of what was asked and kept, as JSON. Saving the
-- attempt replaces its rows.
CREATE TABLE attempt_artifacts (
    bench_id TEXT    NOT NULL,
    task_id  TEXT    NOT NULL,
    model    TEXT    NOT NULL,
    n        INTEGER NOT NULL,
    step     TEXT    NOT NULL DEFAULT '',
    blob     TEXT    NOT NULL DEFAULT '',
    manifest TEXT    NOT NULL,
    PRIMARY KEY (bench_id, task_id, model, n, step),
    FOREIGN KEY (bench_id, task_id, model, n) REFERENCES bench_attempts (bench_id, task_id, model, n) ON DELETE CASCADE
);
