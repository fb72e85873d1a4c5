-- 0002_runs: run lifecycle — task kind, leases, and the step timeline.

-- kind tells a return task from a batch task (a batch walks many return tasks).
ALTER TABLE tasks ADD COLUMN kind TEXT NOT NULL DEFAULT 'return';

-- The lease: the process that drives the task now. NULL owner = nobody.
-- lease_until is renewed by the holder's heartbeat; a holder whose lease
-- expired, or whose pid is gone on the same host, may be taken over.
ALTER TABLE tasks ADD COLUMN lease_owner TEXT;
ALTER TABLE tasks ADD COLUMN lease_pid   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN lease_host  TEXT    NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN lease_until TEXT    NOT NULL DEFAULT '';

-- draft_ttl_seconds is the start input's draft validity, so a task killed
-- before its first checkpoint can be run again exactly as it was asked.
ALTER TABLE tasks ADD COLUMN draft_ttl_seconds INTEGER NOT NULL DEFAULT 300;

CREATE INDEX tasks_status ON tasks (status);

-- steps: the timeline, one row per node run of a task. seq counts from 1
-- with no gaps and no reuse; attempt counts runs of the same node.
CREATE TABLE steps (
    task_id    TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    node       TEXT    NOT NULL,
    attempt    INTEGER NOT NULL,
    status     TEXT    NOT NULL,  -- running, done, waiting, failed
    started_at TEXT    NOT NULL,
    ended_at   TEXT    NOT NULL DEFAULT '',
    error      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, seq)
) STRICT, WITHOUT ROWID;

-- batch_rows: the rows of a batch task, loaded once from its CSV.
CREATE TABLE batch_rows (
    batch_id TEXT    NOT NULL,
    row_no   INTEGER NOT NULL,  -- 1-based, in file order
    task_id  TEXT    NOT NULL,
    order_id TEXT    NOT NULL,
    reason   TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (batch_id, row_no)
) STRICT, WITHOUT ROWID;
