-- 0003_decision_not_counted: business.sqlite's 0010_decision_not_counted
-- on PostgreSQL: why the submit no longer counts an approval of the
-- trail ('' for every answer that counts, and for every answer recorded
-- before this version).
ALTER TABLE business.decisions ADD COLUMN not_counted text COLLATE "C" NOT NULL DEFAULT '';
