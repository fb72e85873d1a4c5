-- 0011_server: what `assistant serve` keeps: access tokens and the
-- responses of POSTs sent with an Idempotency-Key.
--
-- access_tokens: one row per token an operator made for a person. The
-- token itself is never stored: hash is the hex SHA-256 of it, looked up
-- at each sign-in. expires_at, last_used_at and revoked_at are NULL for
-- none; last_used_at is written at most once a minute per token.
CREATE TABLE access_tokens (
    id           TEXT NOT NULL PRIMARY KEY,
    user         TEXT NOT NULL,
    hash         TEXT NOT NULL UNIQUE,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    last_used_at TEXT,
    revoked_at   TEXT
) STRICT;

-- idempotency_keys: the first response to a POST that carried an
-- Idempotency-Key, per signed-in person and key: request_hash is the hex
-- SHA-256 of the method, route and body, status and body the response
-- sent. A key is answered from here for 24 hours after created_at.
CREATE TABLE idempotency_keys (
    user         TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB    NOT NULL,
    created_at   TEXT    NOT NULL,
    PRIMARY KEY (user, key)
) STRICT, WITHOUT ROWID;
