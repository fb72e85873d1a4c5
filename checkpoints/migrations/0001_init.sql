-- 0001_init: threads, checkpoints and pending writes.
--
-- Values, next nodes, metadata and write values are JSON text, so a person can
-- read a store with the sqlite3 shell, e.g.
--   SELECT seq, step, source, json_extract(values_json, '$') FROM checkpoints
--   WHERE thread_id = 'return-25' ORDER BY seq;
-- Times are RFC 3339 text in UTC. The runner sets user_version (and
-- application_id) in the same transaction as these statements.

-- One row per thread: its head, the target of Put's compare-and-set.
CREATE TABLE threads (
    thread_id  TEXT    NOT NULL PRIMARY KEY,
    head_id    TEXT    NOT NULL,
    head_seq   INTEGER NOT NULL CHECK (head_seq > 0),
    updated_at TEXT    NOT NULL
) WITHOUT ROWID;

-- A rowid table: values_json can be kilobytes, and WITHOUT ROWID tables are
-- meant for small rows.
CREATE TABLE checkpoints (
    thread_id     TEXT    NOT NULL REFERENCES threads (thread_id),
    checkpoint_id TEXT    NOT NULL,
    seq           INTEGER NOT NULL CHECK (seq > 0),
    parent_id     TEXT    NOT NULL,                   -- '' for a thread's first checkpoint
    step          INTEGER NOT NULL,                   -- metadata step, copied for filtering
    source        TEXT    NOT NULL,                   -- metadata source, copied for filtering
    format        INTEGER NOT NULL,                   -- encoding version of values_json
    values_json   TEXT CHECK (values_json IS NULL OR json_valid(values_json)),
    next_json     TEXT CHECK (next_json IS NULL OR json_valid(next_json)),
    breakpoint    TEXT    NOT NULL,                   -- 'before:NODE', 'after:NODE' or ''
    metadata_json TEXT    NOT NULL CHECK (json_valid(metadata_json)),
    created_at    TEXT    NOT NULL,
    PRIMARY KEY (thread_id, seq),
    UNIQUE (thread_id, checkpoint_id)
);

CREATE TABLE writes (
    thread_id     TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    node          TEXT    NOT NULL,
    value_json    TEXT CHECK (value_json IS NULL OR json_valid(value_json)),
    PRIMARY KEY (thread_id, checkpoint_id, task_id, kind, idx),
    FOREIGN KEY (thread_id, checkpoint_id) REFERENCES checkpoints (thread_id, checkpoint_id)
);
