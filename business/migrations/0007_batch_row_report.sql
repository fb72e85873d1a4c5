-- batch_row_report: the rows of a batch or a decide run report what each
-- one came to, so a row that made no task (an unknown order, a duplicate)
-- can be found again (docs/cli.md "show --rows").
--
-- line is the row's line in its file (the header is line 1; 0 for a row
-- stored before this schema: its line is row_no + 1). action and draft_id
-- are a decide run's row (task_id the task it decides); a batch's row
-- leaves them ''. outcome is '' until the row was handled, then what it
-- came to (a batch row: the task's stage, not_found, conflict or
-- duplicate_order; a decide row: the task's stage, or the refusal:
-- invalid_input, not_found, conflict, duplicate_task); error_code and
-- error say what went wrong, '' when nothing did. duplicate_of is the line
-- of the earlier row a duplicate repeats, 0 for none.
ALTER TABLE batch_rows ADD COLUMN line         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batch_rows ADD COLUMN action       TEXT    NOT NULL DEFAULT '';
ALTER TABLE batch_rows ADD COLUMN draft_id     TEXT    NOT NULL DEFAULT '';
ALTER TABLE batch_rows ADD COLUMN outcome      TEXT    NOT NULL DEFAULT '';
ALTER TABLE batch_rows ADD COLUMN error_code   TEXT    NOT NULL DEFAULT '';
ALTER TABLE batch_rows ADD COLUMN error        TEXT    NOT NULL DEFAULT '';
ALTER TABLE batch_rows ADD COLUMN duplicate_of INTEGER NOT NULL DEFAULT 0;
