-- 0008_orders_per_owner: an order is identified by its owner and its id.
--
-- Two users may each hold an order with the same id: a user's import of
-- their own orders reads and writes only that user's orders, so it can
-- neither learn whether another user holds an id nor take one
-- (docs/orders.md "Who may import"). The shop's own order ids stay
-- unique: shop is 1 for an order the shop's operator imported (or the
-- teaching file loaded, or any order stored before this schema, when ids
-- were unique), 0 for one a user imported for themselves, and
-- orders_shop_id allows one shop order per id, so an operator import that
-- would give a shop order to another customer is still refused.
--
-- drafts and applications refer to an order by (user, order_id) now; they
-- are rebuilt beside orders (a foreign key cannot be altered), every row
-- keeping its values. The table is WITHOUT ROWID: one B-tree, ordered by
-- (user, order_id), which is also how orders list reads it.
CREATE TABLE orders_v8 (
    user         TEXT    NOT NULL,
    order_id     TEXT    NOT NULL,
    item         TEXT    NOT NULL,
    delivered_at TEXT,
    final_sale   INTEGER NOT NULL DEFAULT 0 CHECK (final_sale IN (0, 1)),
    teaching     INTEGER NOT NULL DEFAULT 0 CHECK (teaching IN (0, 1)),
    shop         INTEGER NOT NULL DEFAULT 1 CHECK (shop IN (0, 1)),
    PRIMARY KEY (user, order_id)
) STRICT, WITHOUT ROWID;

INSERT INTO orders_v8 (user, order_id, item, delivered_at, final_sale, teaching, shop)
    SELECT user, order_id, item, delivered_at, final_sale, teaching, 1 FROM orders;

CREATE TABLE drafts_v8 (
    draft_id      TEXT    NOT NULL PRIMARY KEY,
    task_id       TEXT    NOT NULL,
    order_id      TEXT    NOT NULL,
    user          TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    expires_at    TEXT    NOT NULL,
    version       INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    superseded_at TEXT,
    UNIQUE (task_id, version),
    FOREIGN KEY (user, order_id) REFERENCES orders_v8 (user, order_id)
) STRICT;

INSERT INTO drafts_v8 (draft_id, task_id, order_id, user, reason, created_at, expires_at, version, superseded_at)
    SELECT draft_id, task_id, order_id, user, reason, created_at, expires_at, version, superseded_at FROM drafts;

CREATE TABLE applications_v8 (
    application_id TEXT NOT NULL PRIMARY KEY,
    draft_id       TEXT NOT NULL UNIQUE REFERENCES drafts_v8 (draft_id),
    order_id       TEXT NOT NULL,
    user           TEXT NOT NULL,
    review_status  TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    FOREIGN KEY (user, order_id) REFERENCES orders_v8 (user, order_id)
) STRICT;

INSERT INTO applications_v8 (application_id, draft_id, order_id, user, review_status, created_at)
    SELECT application_id, draft_id, order_id, user, review_status, created_at FROM applications;

DROP TABLE applications;
DROP TABLE drafts;
DROP TABLE orders;
-- The renames rewrite the references of drafts_v8 and applications_v8.
ALTER TABLE orders_v8 RENAME TO orders;
ALTER TABLE drafts_v8 RENAME TO drafts;
ALTER TABLE applications_v8 RENAME TO applications;

CREATE UNIQUE INDEX orders_shop_id ON orders (order_id) WHERE shop = 1;
CREATE INDEX drafts_order ON drafts (user, order_id);
CREATE UNIQUE INDEX drafts_current ON drafts (task_id) WHERE superseded_at IS NULL;
CREATE INDEX applications_order_status ON applications (user, order_id, review_status);
