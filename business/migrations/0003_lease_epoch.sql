-- 0003_lease_epoch: a lease's fencing epoch.

-- lease_epoch counts the leases a task has had: every acquisition (a
-- creation holding its lease, a take-over, a resume) raises it by one, and
-- a release leaves it. A process that read the record at epoch E and then
-- acquired the lease at E+1 knows nobody else held the task in between.
ALTER TABLE tasks ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
