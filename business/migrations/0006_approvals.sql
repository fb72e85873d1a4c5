-- 0006_approvals: draft versions, the decision trail, approvers.
--
-- A task may have several drafts: an edit or a request for changes makes
-- a new version through the prepare node, and the older one is kept,
-- marked superseded. drafts.task_id was UNIQUE (one draft per task); the
-- table is rebuilt with (task_id, version) UNIQUE and at most one current
-- (not superseded) draft per task. applications refers to drafts, so it is
-- rebuilt beside it (an ALTER TABLE cannot drop a UNIQUE constraint, and
-- dropping a table that rows still refer to would break their foreign key);
-- every row keeps its values, and an existing draft becomes version 1.
CREATE TABLE drafts_v6 (
    draft_id      TEXT    NOT NULL PRIMARY KEY,
    task_id       TEXT    NOT NULL,
    order_id      TEXT    NOT NULL REFERENCES orders (order_id),
    user          TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    expires_at    TEXT    NOT NULL,
    -- version counts the task's drafts from 1.
    version       INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    -- superseded_at is when a newer version replaced this one; NULL for
    -- the task's current draft, the only one that may be submitted.
    superseded_at TEXT,
    UNIQUE (task_id, version)
) STRICT;

INSERT INTO drafts_v6 (draft_id, task_id, order_id, user, reason, created_at, expires_at)
    SELECT draft_id, task_id, order_id, user, reason, created_at, expires_at FROM drafts;

CREATE TABLE applications_v6 (
    application_id TEXT NOT NULL PRIMARY KEY,
    draft_id       TEXT NOT NULL UNIQUE REFERENCES drafts_v6 (draft_id),
    order_id       TEXT NOT NULL REFERENCES orders (order_id),
    user           TEXT NOT NULL,
    review_status  TEXT NOT NULL,
    created_at     TEXT NOT NULL
) STRICT;

INSERT INTO applications_v6 (application_id, draft_id, order_id, user, review_status, created_at)
    SELECT application_id, draft_id, order_id, user, review_status, created_at FROM applications;

DROP TABLE applications;
DROP TABLE drafts;
-- The rename rewrites applications_v6's reference to drafts_v6.
ALTER TABLE drafts_v6 RENAME TO drafts;
ALTER TABLE applications_v6 RENAME TO applications;

CREATE INDEX drafts_order ON drafts (order_id);
CREATE UNIQUE INDEX drafts_current ON drafts (task_id) WHERE superseded_at IS NULL;
CREATE INDEX applications_order_status ON applications (order_id, review_status);

-- decisions: the trail of answers given to a task's questions (a reason,
-- approve, cancel, edit, revise): who, when, and the draft and version the
-- answer was bound to. decision_id is the idempotency key: the node that
-- takes the answer records it, and a node that runs again records nothing
-- more. draft_id is '' and version 0 for an answer given before any draft.
CREATE TABLE decisions (
    decision_id TEXT    NOT NULL PRIMARY KEY,
    task_id     TEXT    NOT NULL,
    by_user     TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    draft_id    TEXT    NOT NULL DEFAULT '',
    version     INTEGER NOT NULL DEFAULT 0,
    at          TEXT    NOT NULL,
    -- comment is what a request for changes asks for; reason the new
    -- reason of an edit or of a reason answer.
    comment     TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX decisions_task ON decisions (task_id, at);

-- approver_grants: who may decide whose tasks. A user decides their own
-- tasks, and the tasks of every owner who granted them.
CREATE TABLE approver_grants (
    owner      TEXT NOT NULL,
    grantee    TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (owner, grantee)
) STRICT, WITHOUT ROWID;

CREATE INDEX approver_grants_grantee ON approver_grants (grantee);

-- approver_changes: every grant and revoke, with who made it and when.
CREATE TABLE approver_changes (
    seq     INTEGER PRIMARY KEY,
    owner   TEXT NOT NULL,
    grantee TEXT NOT NULL,
    change  TEXT NOT NULL CHECK (change IN ('grant', 'revoke')),
    by_user TEXT NOT NULL,
    at      TEXT NOT NULL
) STRICT;

-- tasks.approvals is the start input's number of approvals (1 or 2), so a
-- task killed before its first checkpoint runs again as it was asked.
ALTER TABLE tasks ADD COLUMN approvals INTEGER NOT NULL DEFAULT 1 CHECK (approvals IN (1, 2));
