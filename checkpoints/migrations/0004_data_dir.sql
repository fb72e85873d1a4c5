-- 0004_data_dir: the data dir's identity, which pairs this file with the
-- business.sqlite beside it.
--
-- One row: id is a UUID that both files of a data dir carry. The migration
-- runner (internal/sqlite) writes it in this transaction: the identity the
-- business.sqlite beside it carries, or a new one, which business.sqlite then
-- gets in its own migration. stamp is raised by the first write transaction
-- of every process, so that a -wal file carries the identity of the file it
-- was written for (docs/storage.md "Pairing").
CREATE TABLE data_dir (
    one   INTEGER PRIMARY KEY CHECK (one = 1),
    id    TEXT    NOT NULL CHECK (length(id) = 36),
    stamp INTEGER NOT NULL DEFAULT 0
) STRICT;
