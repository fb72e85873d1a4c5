-- 0009_task_error: a task record that ended failed keeps why.
--
-- error_code and error are the failure's code and message (draft_expired,
-- "draft … expired at … before it was approved; nothing was submitted"),
-- written with status failed in the same statement that ends the run
-- (a release, a chunk's progress, a repair); '' for every other status,
-- and for a task that failed before this schema. Before, the why lived
-- only in the checkpoint file: after a power loss or a kill between a
-- chunk's two commits took that checkpoint, the record said failed and
-- the task was reported recorded_end, its failure unknown
-- (docs/recovery.md "A business file ahead of its checkpoints").
ALTER TABLE tasks ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN error      TEXT NOT NULL DEFAULT '';
