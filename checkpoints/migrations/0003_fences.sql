-- 0003_fences: the fencing epoch of each thread.
--
-- A process that drives a thread holds its task's lease, which carries a
-- fencing epoch (business.sqlite, tasks.lease_epoch). A process that takes
-- a thread over records its epoch here first; every checkpoint and pending
-- write a holder makes is then refused when the thread's fence is above the
-- holder's epoch, so a holder that lost its lease (paused, then resumed)
-- cannot write after the takeover. A thread without a row has fence 0.
CREATE TABLE fences (
    thread_id TEXT    NOT NULL PRIMARY KEY,
    epoch     INTEGER NOT NULL CHECK (epoch >= 0)
) WITHOUT ROWID;
