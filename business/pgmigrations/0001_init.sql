-- 0001_init: the business store on PostgreSQL, in a schema of its own.
--
-- The same tables, keys and indexes as business.sqlite at schema 8
-- (business/migrations/0001..0008 folded into one), so each statement of
-- the store, written for each database (business/queries_sqlite.go,
-- business/queries_postgres.go), reads and writes the same columns on
-- both. The column user is quoted here, a reserved word.
--
-- - Times are TEXT in UTC, RFC 3339 with nine fraction digits, as in the
--   file: fixed width, so text order is time order, and the JSON the
--   commands print is byte for byte the same on both stores.
-- - Booleans are bigint 0/1 columns, as SQLite's INTEGER ones; every
--   INTEGER is bigint.
-- - Text is COLLATE "C", so ORDER BY and BETWEEN compare bytes, as SQLite
--   does, whatever the database's collation.
-- - decisions has an identity column named rowid: SQLite's implicit rowid
--   is how the trail orders two answers given at the same time (ORDER BY
--   at, rowid), and the column keeps that order here.
-- - approver_changes.seq is an identity column, as SQLite's INTEGER
--   PRIMARY KEY is an alias of the rowid.
--
-- The runner (internal/pgdb, Open) records version 1 in
-- business.schema_version, fills business.data_dir and loads the seed in
-- this transaction. A person reads the store with psql, e.g.
--   SELECT task_id, status, stage FROM business.tasks ORDER BY created_at;

CREATE SCHEMA business;

-- One row per migration applied, the newest being the schema's version.
CREATE TABLE business.schema_version (
    version    integer     NOT NULL PRIMARY KEY CHECK (version > 0),
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- The data dir identity (a UUID) this schema shares with its checkpoint
-- store; stamp is kept for the same shape as the SQLite table.
CREATE TABLE business.data_dir (
    one   bigint NOT NULL PRIMARY KEY CHECK (one = 1),
    id    text COLLATE "C" NOT NULL CHECK (length(id) = 36),
    stamp bigint NOT NULL DEFAULT 0
);

-- orders: what a user bought, keyed by owner and id. delivered_at NULL
-- means not delivered yet; teaching marks the teaching file's orders,
-- shop the shop's own (one shop order per id).
CREATE TABLE business.orders (
    "user"       text COLLATE "C" NOT NULL,
    order_id     text COLLATE "C" NOT NULL,
    item         text COLLATE "C" NOT NULL,
    delivered_at text COLLATE "C",
    final_sale   bigint NOT NULL DEFAULT 0 CHECK (final_sale IN (0, 1)),
    teaching     bigint NOT NULL DEFAULT 0 CHECK (teaching IN (0, 1)),
    shop         bigint NOT NULL DEFAULT 1 CHECK (shop IN (0, 1)),
    PRIMARY KEY ("user", order_id)
);

CREATE UNIQUE INDEX orders_shop_id ON business.orders (order_id) WHERE shop = 1;

-- drafts: prepared return requests, versions of a task's request; at most
-- one current (not superseded) draft per task.
CREATE TABLE business.drafts (
    draft_id      text COLLATE "C" NOT NULL PRIMARY KEY,
    task_id       text COLLATE "C" NOT NULL,
    order_id      text COLLATE "C" NOT NULL,
    "user"        text COLLATE "C" NOT NULL,
    reason        text COLLATE "C" NOT NULL,
    created_at    text COLLATE "C" NOT NULL,
    expires_at    text COLLATE "C" NOT NULL,
    version       bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
    superseded_at text COLLATE "C",
    UNIQUE (task_id, version),
    FOREIGN KEY ("user", order_id) REFERENCES business.orders ("user", order_id)
);

CREATE INDEX drafts_order ON business.drafts ("user", order_id);
CREATE UNIQUE INDEX drafts_current ON business.drafts (task_id) WHERE superseded_at IS NULL;

-- applications: submitted returns; draft_id is the idempotency key.
CREATE TABLE business.applications (
    application_id text COLLATE "C" NOT NULL PRIMARY KEY,
    draft_id       text COLLATE "C" NOT NULL UNIQUE REFERENCES business.drafts (draft_id),
    order_id       text COLLATE "C" NOT NULL,
    "user"         text COLLATE "C" NOT NULL,
    review_status  text COLLATE "C" NOT NULL,
    created_at     text COLLATE "C" NOT NULL,
    FOREIGN KEY ("user", order_id) REFERENCES business.orders ("user", order_id)
);

CREATE INDEX applications_order_status ON business.applications ("user", order_id, review_status);

-- tasks: run records (package runs), one per task id, with the lease and
-- its fencing epoch. order_id has no foreign key on purpose, as in the file.
CREATE TABLE business.tasks (
    task_id           text COLLATE "C" NOT NULL PRIMARY KEY,
    "user"            text COLLATE "C" NOT NULL,
    order_id          text COLLATE "C" NOT NULL,
    reason            text COLLATE "C" NOT NULL DEFAULT '',
    fingerprint       text COLLATE "C" NOT NULL DEFAULT '',
    status            text COLLATE "C" NOT NULL,
    stage             text COLLATE "C" NOT NULL DEFAULT '',
    created_at        text COLLATE "C" NOT NULL,
    updated_at        text COLLATE "C" NOT NULL,
    kind              text COLLATE "C" NOT NULL DEFAULT 'return',
    lease_owner       text COLLATE "C",
    lease_pid         bigint NOT NULL DEFAULT 0,
    lease_host        text COLLATE "C" NOT NULL DEFAULT '',
    lease_until       text COLLATE "C" NOT NULL DEFAULT '',
    draft_ttl_seconds bigint NOT NULL DEFAULT 300,
    lease_epoch       bigint NOT NULL DEFAULT 0,
    approvals         bigint NOT NULL DEFAULT 1 CHECK (approvals IN (1, 2))
);

CREATE INDEX tasks_user_status ON business.tasks ("user", status, created_at);
CREATE INDEX tasks_status ON business.tasks (status);

-- steps: the timeline, one row per node run of a task.
CREATE TABLE business.steps (
    task_id    text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    node       text COLLATE "C" NOT NULL,
    attempt    bigint NOT NULL,
    status     text COLLATE "C" NOT NULL,
    started_at text COLLATE "C" NOT NULL,
    ended_at   text COLLATE "C" NOT NULL DEFAULT '',
    error      text COLLATE "C" NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, seq)
);

-- batch_rows: the rows of a batch or decide run and what each came to.
CREATE TABLE business.batch_rows (
    batch_id     text COLLATE "C" NOT NULL,
    row_no       bigint NOT NULL,
    task_id      text COLLATE "C" NOT NULL,
    order_id     text COLLATE "C" NOT NULL,
    reason       text COLLATE "C" NOT NULL DEFAULT '',
    line         bigint NOT NULL DEFAULT 0,
    action       text COLLATE "C" NOT NULL DEFAULT '',
    draft_id     text COLLATE "C" NOT NULL DEFAULT '',
    outcome      text COLLATE "C" NOT NULL DEFAULT '',
    error_code   text COLLATE "C" NOT NULL DEFAULT '',
    error        text COLLATE "C" NOT NULL DEFAULT '',
    duplicate_of bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, row_no)
);

-- decisions: the trail of answers given to a task's questions.
CREATE TABLE business.decisions (
    decision_id text COLLATE "C" NOT NULL PRIMARY KEY,
    task_id     text COLLATE "C" NOT NULL,
    by_user     text COLLATE "C" NOT NULL,
    action      text COLLATE "C" NOT NULL,
    draft_id    text COLLATE "C" NOT NULL DEFAULT '',
    version     bigint NOT NULL DEFAULT 0,
    at          text COLLATE "C" NOT NULL,
    comment     text COLLATE "C" NOT NULL DEFAULT '',
    reason      text COLLATE "C" NOT NULL DEFAULT '',
    rowid       bigint GENERATED ALWAYS AS IDENTITY
);

CREATE INDEX decisions_task ON business.decisions (task_id, at);

-- approver_grants: who may decide whose tasks.
CREATE TABLE business.approver_grants (
    owner      text COLLATE "C" NOT NULL,
    grantee    text COLLATE "C" NOT NULL,
    granted_by text COLLATE "C" NOT NULL,
    granted_at text COLLATE "C" NOT NULL,
    PRIMARY KEY (owner, grantee)
);

CREATE INDEX approver_grants_grantee ON business.approver_grants (grantee);

-- approver_changes: every grant and revoke, with who made it and when.
CREATE TABLE business.approver_changes (
    seq     bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    owner   text COLLATE "C" NOT NULL,
    grantee text COLLATE "C" NOT NULL,
    change  text COLLATE "C" NOT NULL CHECK (change IN ('grant', 'revoke')),
    by_user text COLLATE "C" NOT NULL,
    at      text COLLATE "C" NOT NULL
);
