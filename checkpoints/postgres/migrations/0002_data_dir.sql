-- 0002_data_dir: the identity of the data dir this schema belongs to.
--
-- One row: id is a UUID. The business store in the same database (schema
-- business) is opened with it and records it in its own business.data_dir,
-- so that a business schema paired with another checkpoint schema is
-- refused before anything is written, as the two SQLite files of a data dir
-- are (docs/storage.md "Pairing"). As checkpoints.sqlite does, it adopts
-- the identity the business schema already carries, or gets a new one.
-- stamp keeps the shape of the SQLite table; nothing raises it here.
CREATE TABLE checkpoints.data_dir (
    one   bigint NOT NULL PRIMARY KEY CHECK (one = 1),
    id    text COLLATE "C" NOT NULL CHECK (length(id) = 36),
    stamp bigint NOT NULL DEFAULT 0
);

DO $$
BEGIN
    IF to_regclass('business.data_dir') IS NOT NULL THEN
        INSERT INTO checkpoints.data_dir (one, id)
        SELECT 1, coalesce((SELECT id FROM business.data_dir WHERE one = 1), gen_random_uuid()::text);
    ELSE
        INSERT INTO checkpoints.data_dir (one, id) VALUES (1, gen_random_uuid()::text);
    END IF;
END
$$;
