-- 0002_compact: the same data in fewer bytes (issue 7: at most 2 KB and 8
-- rows of checkpoint storage per finished return task).
--
--   - checkpoints drop parent_id: a thread is linear (Put is a compare-and-set
--     on the head), so the parent of the checkpoint at seq n is the one at
--     seq n - 1, '' at seq 1. pruned_parent_id keeps the parent's id only
--     where that checkpoint is gone (Prune sets it on the oldest checkpoint
--     it keeps); it is NULL everywhere else.
--   - writes name their checkpoint by (thread_id, seq), not by its id.
--   - metadata_json no longer repeats source and step (columns already): it
--     holds only "writes" and "waiting", and is NULL when both are empty.
--   - Times are INTEGER Unix nanoseconds in UTC; a NULL created_at is Go's
--     zero time.
--
-- Values, next nodes, metadata and write values stay JSON text, so a person
-- can read a store with the sqlite3 shell, e.g.
--   SELECT seq, step, source, strftime('%Y-%m-%dT%H:%M:%fZ', created_at / 1e9, 'unixepoch') AS created,
--          json_extract(values_json, '$') FROM checkpoints
--   WHERE thread_id = 'return-25' ORDER BY seq;
-- and a checkpoint's parent with
--   SELECT c.seq, c.checkpoint_id, coalesce(c.pruned_parent_id, p.checkpoint_id, '') AS parent_id
--   FROM checkpoints c LEFT JOIN checkpoints p ON p.thread_id = c.thread_id AND p.seq = c.seq - 1;
--
-- An existing version 1 file is converted in this one transaction without
-- losing anything: a parent_id, a metadata_json or a time that the rules
-- above cannot rebuild exactly is kept as it was (pruned_parent_id, the whole
-- metadata_json), and a time that is not an RFC 3339 text from 1677-09-21 to
-- 2262-04-11 (int64 nanoseconds) fails a CHECK, which rolls the conversion
-- back and leaves the file at version 1. The runner sets user_version in the same transaction.

ALTER TABLE writes RENAME TO writes_v1;
ALTER TABLE checkpoints RENAME TO checkpoints_v1;
ALTER TABLE threads RENAME TO threads_v1;

-- Every time of version 1 (Go's RFC 3339 with nanoseconds: '…T20:31:57.0652Z',
-- trailing zeros dropped; 'Z' or '+hh:mm') and its Unix nanoseconds. Whole
-- seconds come from unixepoch, the fraction from its digits, so nothing is
-- rounded through a floating-point number. A text this cannot read gets a
-- text "ns", which the CHECKs of the new tables refuse.
CREATE TEMP TABLE v1_times (text TEXT PRIMARY KEY, ns) WITHOUT ROWID; -- ns: no type, no conversion
INSERT INTO v1_times (text, ns)
SELECT t,
       CASE
           WHEN t = '0001-01-01T00:00:00Z' THEN NULL -- Go's zero time
           WHEN frac GLOB '*[^0-9]*' OR length(frac) > 9 THEN 'unreadable time ' || t
           ELSE coalesce(unixepoch(substr(t, 1, 19) || zone) * 1000000000
                         + CAST(substr(frac || '000000000', 1, 9) AS INTEGER),
                         'unreadable time ' || t)
       END
FROM (SELECT t, zone,
             CASE WHEN substr(t, 20, 1) = '.' THEN substr(t, 21, length(t) - 20 - length(zone)) ELSE '' END AS frac
      FROM (SELECT t, CASE WHEN t LIKE '%Z' THEN 'Z' ELSE substr(t, -6) END AS zone
            FROM (SELECT created_at AS t FROM checkpoints_v1 UNION SELECT updated_at FROM threads_v1)));

-- One row per thread: its head, the target of Put's compare-and-set.
CREATE TABLE threads (
    thread_id  TEXT    NOT NULL PRIMARY KEY,
    head_id    TEXT    NOT NULL,
    head_seq   INTEGER NOT NULL CHECK (head_seq > 0),
    updated_at INTEGER NOT NULL CHECK (typeof(updated_at) = 'integer') -- Unix nanoseconds, UTC
) WITHOUT ROWID;

-- A rowid table: values_json can be kilobytes, and WITHOUT ROWID tables are
-- meant for small rows.
CREATE TABLE checkpoints (
    thread_id        TEXT    NOT NULL REFERENCES threads (thread_id),
    checkpoint_id    TEXT    NOT NULL,
    seq              INTEGER NOT NULL CHECK (seq > 0),
    step             INTEGER NOT NULL,                   -- Metadata.Step
    source           TEXT    NOT NULL,                   -- Metadata.Source
    format           INTEGER NOT NULL,                   -- encoding version of values_json
    values_json      TEXT CHECK (values_json IS NULL OR json_valid(values_json)),
    next_json        TEXT CHECK (next_json IS NULL OR json_valid(next_json)),
    breakpoint       TEXT    NOT NULL,                   -- 'before:NODE', 'after:NODE' or ''
    -- {"writes": …, "waiting": …} of Metadata; NULL when both are empty.
    metadata_json    TEXT CHECK (metadata_json IS NULL OR json_valid(metadata_json)),
    -- Unix nanoseconds, UTC; NULL for Go's zero time.
    created_at       INTEGER CHECK (created_at IS NULL OR typeof(created_at) = 'integer'),
    -- NULL: the parent is the checkpoint at seq - 1 ('' at seq 1).
    pruned_parent_id TEXT,
    PRIMARY KEY (thread_id, seq),
    UNIQUE (thread_id, checkpoint_id)
);

-- Small rows, read and written by their key: no rowid.
CREATE TABLE writes (
    thread_id  TEXT    NOT NULL,
    seq        INTEGER NOT NULL,                        -- the checkpoint's seq
    task_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    idx        INTEGER NOT NULL,
    node       TEXT    NOT NULL,
    value_json TEXT CHECK (value_json IS NULL OR json_valid(value_json)),
    PRIMARY KEY (thread_id, seq, task_id, kind, idx),
    FOREIGN KEY (thread_id, seq) REFERENCES checkpoints (thread_id, seq)
) WITHOUT ROWID;

INSERT INTO threads (thread_id, head_id, head_seq, updated_at)
SELECT th.thread_id, th.head_id, th.head_seq, t.ns
FROM threads_v1 th JOIN v1_times t ON t.text = th.updated_at;

-- Version 1 wrote metadata_json as {"source":S,"step":N[,"writes":…][,"waiting":…]}
-- (checkpoints.encodeMetadata): the prefix is cut off as text, so every
-- byte of the writes stays as it was. Another layout is kept whole; on read
-- its source and step agree with the columns they were copied to.
INSERT INTO checkpoints (thread_id, checkpoint_id, seq, step, source, format, values_json, next_json,
                         breakpoint, metadata_json, created_at, pruned_parent_id)
SELECT c.thread_id, c.checkpoint_id, c.seq, c.step, c.source, c.format, c.values_json, c.next_json,
       c.breakpoint,
       CASE
           WHEN c.metadata_json = c.prefix || '}' THEN NULL
           WHEN substr(c.metadata_json, 1, length(c.prefix) + 1) = c.prefix || ','
               THEN '{' || substr(c.metadata_json, length(c.prefix) + 2)
           ELSE c.metadata_json
       END,
       t.ns,
       CASE WHEN c.parent_id = coalesce(p.checkpoint_id, '') THEN NULL ELSE c.parent_id END
FROM (SELECT *, '{"source":' || json_quote(source) || ',"step":' || step AS prefix FROM checkpoints_v1) c
JOIN v1_times t ON t.text = c.created_at
LEFT JOIN checkpoints_v1 p ON p.thread_id = c.thread_id AND p.seq = c.seq - 1;

-- Foreign keys kept every write's checkpoint: the join loses no row.
INSERT INTO writes (thread_id, seq, task_id, kind, idx, node, value_json)
SELECT w.thread_id, c.seq, w.task_id, w.kind, w.idx, w.node, w.value_json
FROM writes_v1 w JOIN checkpoints_v1 c ON c.thread_id = w.thread_id AND c.checkpoint_id = w.checkpoint_id;

-- Children first: foreign keys are on.
DROP TABLE writes_v1;
DROP TABLE checkpoints_v1;
DROP TABLE threads_v1;
DROP TABLE temp.v1_times;
