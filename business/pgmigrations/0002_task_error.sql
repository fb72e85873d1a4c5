-- 0002_task_error: business.sqlite's 0009_task_error on PostgreSQL: a
-- task record that ended failed keeps why (error_code, error; '' for
-- every other status and for a task that failed before this version).
ALTER TABLE business.tasks ADD COLUMN error_code text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE business.tasks ADD COLUMN error      text COLLATE "C" NOT NULL DEFAULT '';
