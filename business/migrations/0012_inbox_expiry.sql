-- 0012_inbox_expiry: the current drafts in expiry order, so that the
-- inbox's "waiting for me" page walks the drafts that expire next (from
-- now, or from the page's cursor) and stops at the page's limit instead
-- of reading and sorting every waiting task.
CREATE INDEX drafts_current_expiry ON drafts (expires_at, task_id) WHERE superseded_at IS NULL;
