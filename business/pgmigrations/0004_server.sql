-- 0004_server: business.sqlite's 0011_server on PostgreSQL: access tokens
-- (stored as the hex SHA-256 of the token, never the token) and the
-- first responses of POSTs sent with an Idempotency-Key.
CREATE TABLE business.access_tokens (
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    "user"       text COLLATE "C" NOT NULL,
    hash         text COLLATE "C" NOT NULL UNIQUE,
    created_by   text COLLATE "C" NOT NULL,
    created_at   text COLLATE "C" NOT NULL,
    expires_at   text COLLATE "C",
    last_used_at text COLLATE "C",
    revoked_at   text COLLATE "C"
);

CREATE TABLE business.idempotency_keys (
    "user"       text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    request_hash text COLLATE "C" NOT NULL,
    status       bigint NOT NULL,
    body         bytea  NOT NULL,
    created_at   text COLLATE "C" NOT NULL,
    PRIMARY KEY ("user", key)
);
