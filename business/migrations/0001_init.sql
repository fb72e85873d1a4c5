-- 0001_init: the return desk.
--
-- Times are TEXT in UTC, RFC 3339 with nine fraction digits
-- ("2025-01-02T03:04:05.000000000Z"): fixed width, so text order is time order.
-- The migration runner sets PRAGMA application_id and user_version in the same
-- transaction; this file only holds schema.

-- orders: what a user bought. delivered_at NULL means not delivered yet.
CREATE TABLE orders (
    order_id     TEXT    NOT NULL PRIMARY KEY,
    user         TEXT    NOT NULL,
    item         TEXT    NOT NULL,
    delivered_at TEXT,
    final_sale   INTEGER NOT NULL DEFAULT 0 CHECK (final_sale IN (0, 1))
) STRICT;

CREATE INDEX orders_user ON orders (user);

-- drafts: a prepared return request. task_id is the idempotency key: a task
-- has at most one draft, so re-running the prepare node reuses it.
CREATE TABLE drafts (
    draft_id   TEXT NOT NULL PRIMARY KEY,
    task_id    TEXT NOT NULL UNIQUE,
    order_id   TEXT NOT NULL REFERENCES orders (order_id),
    user       TEXT NOT NULL,
    reason     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;

CREATE INDEX drafts_order ON drafts (order_id);

-- applications: a submitted return. draft_id is the idempotency key: a draft
-- is submitted at most once, whatever crashes and retries happen around it.
CREATE TABLE applications (
    application_id TEXT NOT NULL PRIMARY KEY,
    draft_id       TEXT NOT NULL UNIQUE REFERENCES drafts (draft_id),
    order_id       TEXT NOT NULL REFERENCES orders (order_id),
    user           TEXT NOT NULL,
    review_status  TEXT NOT NULL,
    created_at     TEXT NOT NULL
) STRICT;

CREATE INDEX applications_order_status ON applications (order_id, review_status);

-- tasks: run records of the return flow, one per task id (= engine thread).
-- order_id has no foreign key on purpose: a task for an unknown order is
-- recorded too, and fails in its lookup node.
CREATE TABLE tasks (
    task_id     TEXT NOT NULL PRIMARY KEY,
    user        TEXT NOT NULL,
    order_id    TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    stage       TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
) STRICT;

CREATE INDEX tasks_user_status ON tasks (user, status, created_at);
