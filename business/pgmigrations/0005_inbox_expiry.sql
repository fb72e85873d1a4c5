-- 0005_inbox_expiry: business.sqlite's 0012_inbox_expiry on PostgreSQL:
-- the current drafts in expiry order, for the inbox's "waiting for me"
-- page.
CREATE INDEX drafts_current_expiry ON business.drafts (expires_at, task_id) WHERE superseded_at IS NULL;
