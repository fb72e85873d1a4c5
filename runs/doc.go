// Package runs is the run bookkeeping of a data dir: what a person and the
// lifecycle commands need to know about a task's run beyond its checkpoints.
//
//   - task records (TaskRecord): who started the task, for which order, with
//     which input fingerprint, and its run status and stage as of the last
//     command;
//   - leases (Lease): the one process that drives a task now, renewed by its
//     heartbeat (RenewLease), taken over only from a holder that is gone
//     (AcquireLease), given up with the status the run reached
//     (ReleaseLease);
//   - operator stop (RequestStop): running → interrupted, seen by the
//     holder at its next heartbeat;
//   - the timeline (TimelineStep): one row per node run, with its attempt,
//     status and times;
//   - batch rows (BatchRow): the lines of a batch file, walked by the batch
//     flow.
//
// Its tables live in business.sqlite beside the return desk (package
// business), or in the desk's PostgreSQL schema (business.OpenPostgres), so
// a Store is made over the desk's opened store, either kind:
//
//	desk, err := business.Open(ctx, "data/business.sqlite", business.Options{})
//	rs := runs.New(desk.Handle(), time.Now)
//	t, err := rs.Task(ctx, "return-25")
//
// Its statements are written for each database (queries_sqlite.go,
// queries_postgres.go); New takes those of its Handle's.
//
// Rules it keeps: every status change by a lease holder is a guarded update
// (WHERE lease_owner = ?, rows affected checked; zero rows is ErrConflict,
// never ignored); a lease is taken over only when it lapsed or its holder is
// known dead; the store records statuses as given and leaves the rules of
// which status may follow which to the application layer (flow/returns).
package runs
