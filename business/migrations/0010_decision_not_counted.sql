-- 0010_decision_not_counted: an approval the submit no longer counts.
--
-- not_counted says why the submit that was to carry the approval out
-- found it no longer counts ("revoked at …: bob no longer holds a grant
-- from alice", the requester's own approval of a task that needs two
-- other people, a version the draft no longer has), written in the
-- submit's business transaction, which makes no application then. The
-- approval stays in the trail; the task waits for another. '' for every
-- answer that counts, and for every answer recorded before this schema.
ALTER TABLE decisions ADD COLUMN not_counted TEXT NOT NULL DEFAULT '';
