-- 0004_data_dir: the data dir's identity, which pairs this file with the
-- checkpoints.sqlite beside it.
--
-- One row: id is a UUID that both files of a data dir carry. The migration
-- runner (internal/sqlite) writes it in this transaction: the identity the
-- data dir's checkpoints.sqlite carries, or a new one. A business.sqlite whose
-- id differs from its checkpoints.sqlite's is refused before anything is
-- written. stamp is raised by the first write transaction of every process,
-- so that a -wal file carries the identity of the file it was written for
-- (docs/storage.md "Pairing").
--
-- The look-ups the flow makes at the point of action (a task's application
-- by its draft: drafts.task_id and applications.draft_id, both UNIQUE; an
-- application or a draft by its primary key; an order's pending
-- application: applications_order_status) are all indexed already.
CREATE TABLE data_dir (
    one   INTEGER PRIMARY KEY CHECK (one = 1),
    id    TEXT    NOT NULL CHECK (length(id) = 36),
    stamp INTEGER NOT NULL DEFAULT 0
) STRICT;
