-- 0001_init: the checkpointer's tables, in a schema of their own.
--
-- The same data as the SQLite file (checkpoints/migrations, at schema 4):
-- threads with their head, checkpoints by (thread, seq), pending writes by
-- (thread, seq, task, kind, idx), the fencing epoch of each thread. A
-- second store (the business store) gets a schema of its own beside this
-- one, so `pg_dump -n checkpoints -n business` saves the pair.
--
-- JSON is stored as type json, which keeps the text exactly as written
-- (a checkpoint must come back byte for byte; jsonb would not) and still
-- refuses what is not JSON. Times a checkpoint carries are bigint Unix
-- nanoseconds (timestamptz keeps only microseconds). Ids and names are
-- COLLATE "C", so pending writes sort by bytes, as in every store.
--
-- A person reads a store with psql, e.g.
--   SELECT seq, step, source, values_json FROM checkpoints.checkpoints
--   WHERE thread_id = 'return-25' ORDER BY seq;
--
-- The runner (migrate.go) creates nothing outside this transaction and
-- records version 1 in checkpoints.schema_version in it.

CREATE SCHEMA checkpoints;

-- One row per migration applied, the newest being the schema's version.
CREATE TABLE checkpoints.schema_version (
    version    integer     NOT NULL PRIMARY KEY CHECK (version > 0),
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- One row per thread: its head, the target of Put's compare-and-set.
CREATE TABLE checkpoints.threads (
    thread_id  text COLLATE "C" NOT NULL PRIMARY KEY,
    head_id    text COLLATE "C" NOT NULL,
    head_seq   bigint           NOT NULL CHECK (head_seq > 0),
    updated_at timestamptz      NOT NULL DEFAULT now()
);

CREATE TABLE checkpoints.checkpoints (
    thread_id        text COLLATE "C" NOT NULL REFERENCES checkpoints.threads (thread_id),
    checkpoint_id    text COLLATE "C" NOT NULL,
    seq              bigint           NOT NULL CHECK (seq > 0),
    step             bigint           NOT NULL, -- Metadata.Step
    source           text             NOT NULL, -- Metadata.Source
    format           bigint           NOT NULL, -- encoding version of values_json
    values_json      json,
    next_json        json,
    breakpoint       text             NOT NULL, -- 'before:NODE', 'after:NODE' or ''
    -- {"writes": …, "waiting": …} of Metadata; NULL when both are empty.
    metadata_json    json,
    -- Unix nanoseconds, UTC; NULL for Go's zero time.
    created_at       bigint,
    -- NULL: the parent is the checkpoint at seq - 1 ('' at seq 1). Prune
    -- keeps the id here on the oldest checkpoint it leaves.
    pruned_parent_id text COLLATE "C",
    PRIMARY KEY (thread_id, seq),
    UNIQUE (thread_id, checkpoint_id)
);

CREATE TABLE checkpoints.writes (
    thread_id  text COLLATE "C" NOT NULL,
    seq        bigint           NOT NULL, -- the checkpoint's seq
    task_id    text COLLATE "C" NOT NULL,
    kind       text COLLATE "C" NOT NULL,
    idx        bigint           NOT NULL,
    node       text             NOT NULL,
    value_json json,
    PRIMARY KEY (thread_id, seq, task_id, kind, idx),
    FOREIGN KEY (thread_id, seq) REFERENCES checkpoints.checkpoints (thread_id, seq)
);

-- The fencing epoch of each thread (flow.Fencer): a holder whose epoch is
-- below it writes nothing more. A thread without a row has fence 0.
CREATE TABLE checkpoints.fences (
    thread_id text COLLATE "C" NOT NULL PRIMARY KEY,
    epoch     bigint           NOT NULL CHECK (epoch >= 0)
);
