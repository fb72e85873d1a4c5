// Package returns is the application layer of assistant: the return-request
// flow and the batch flow built on the engine (package flow), and the
// operations every command calls.
//
// What it holds, file by file:
//
//   - graph.go, state.go, format.go: the return graph (lookup → ask_reason →
//     prepare → review → submit | cancel) and its routing, its state and
//     the state's stored formats;
//   - questions.go: the questions the graph asks (need_reason, approval)
//     and the answers that resume them;
//   - nodes.go, nodes_review.go: the nodes' work: lookup, ask_reason and
//     prepare; review, submit and cancel;
//   - validate.go: the limits on a reason, a task id and a draft's TTL;
//   - service.go: Open and the Service; location.go: where the business
//     store is (a DataDir or a ServerStore) and whether opening it may
//     make what is missing (OpenMode); pair.go: the two stores checked as
//     one pair (a data dir's two files, a server's two schemas);
//   - runner.go: how runs are driven (a runner and its policy);
//   - start.go, resume.go, show.go, stop.go, recover.go, wait.go: the
//     operations of the same names; list.go: list and its filters and
//     pages; resume_options.go: the input of
//     resume, checked before any store is read; recovery.go: what continuing a
//     crashed run cost (RecoveryView); busy.go: a refusal because another
//     live process holds the task, told for the user who asked;
//   - approvers.go: who may decide a task (approvers and their scope);
//   - answer.go: an answer checked against the question it answers (its
//     kind, its draft and version);
//   - answer_recorded.go, answer_ended.go: an answer checked against the
//     answers the task has recorded or saved already, and against a run
//     that has ended;
//   - plan.go: the command that answers or continues a run (plan);
//   - rounds.go: the two approvals of a four-eyes task, given in one round;
//   - trail.go: the business file's decision trail, written before an
//     answer is saved;
//   - standing.go: an answer the trail holds that the checkpoints lost,
//     which stands and alone carries the task on;
//   - lease.go, acquire.go, drive.go, timeline.go: the lease and its
//     heartbeat, taking a task's lease in the mode the caller names,
//     driving one run under its lease, and recording the timeline;
//   - batch.go: the batch graph and its state (BatchState, the limits);
//     batch_start.go: StartBatch, refusing a batch whose orders another
//     batch holds (overlap); batch_duplicates.go: rows whose order or task
//     an earlier row names; batch_task.go: a batch task created with its
//     rows, or continued when its command is given again; batch_drive.go:
//     a batch's run driven under its lease, and its view;
//   - batchfile.go, chunk.go, batch_row.go: a batch's input file, its
//     chunks of rows, and one row's run;
//   - decide.go, decide_report.go: a decide run (many decisions from one
//     file) and the per-row report of a batch or decide run (RowReport);
//   - view.go, now.go, listed.go, outcome.go, schema.go: what is printed,
//     the one rule of a task as it stands at the moment of reading, a
//     listed task shown as show would show it, the outcome a program
//     branches on, and the JSON's schema version;
//   - history.go, prune.go, orders.go, order_detail.go: a task's history,
//     pruning, orders, and one order as it is shown;
//   - errors.go, hint.go, fault.go: the sentinels that choose exit codes
//     and the typed error that carries a message and its hint apart
//     (Error), the inputs and hints a front end words its own way
//     (Input, Hint, Wording), and fault injection; refusals.go: the hints
//     of the stores' refusals of a file or a schema;
//   - reconcile.go: a head checked against the business file before it is
//     used (ErrInconsistent);
//   - verify.go, verify_report.go, verify_runs.go: the read-only check of a
//     data dir, its report, and its cross-check of runs against records;
//     backup.go: the data dir's consistent copy; newdir.go,
//     rename_linux.go, rename_other.go: a data dir made aside and renamed
//     into place, never over one that appeared meanwhile.
//
// How a command passes through it, e.g. the approval of task T (Resume
// with the action approve): cmd opens the checkpoint store and calls Open, which opens the
// business file (business, and runs over the same file) and compiles the
// graphs. Resume checks the options (nothing is read yet), reads the task
// record (runs: owner, kind, lease), reads the head checkpoint once, checks
// the answer against the pending question (a wrong answer changes nothing),
// takes the task's lease (runs.AcquireLease), and drives the run under the
// lease: the engine continues from the head already read, the nodes write
// the desk (business: draft, application), a heartbeat renews the lease and
// watches for an operator stop, and the release records the run status in
// the command's one durable commit to business.sqlite. The View of the head
// the run ended at is what cmd prints; Classify turns any error into this
// package's sentinels, from which cmd picks the exit code.
//
// The mode of a run is a value, never a nil check: the runner of a lone
// command (commandPolicy) has a heartbeat and releases its lease durably; a
// batch's row runner (rowPolicy) and chunk runner (chunkPolicy) have none,
// and the chunk runner buffers its timeline, reads its rows' records ahead,
// records their status in one statement and keeps their leases until the
// chunk's checkpoints are committed. How a runner takes a lease is its
// policy's acquireMode: acquireCommand (the checkpoint store fenced
// before the lease is taken), acquireFresh, acquireChunk (the records read under
// the chunk's write lock), acquireRecover (recover's runner, recoverPolicy:
// only a task still recorded running), and a repair's acquireRepair (only
// while the record is as it was read).
//
// Rules it keeps (docs/design.md, docs/recovery.md): a node may run more
// than once, so every side effect is keyed (one draft per task and
// version, one application per draft); a business row a checkpoint names
// is durable before the checkpoint is written; an answer is checked before
// anything is written; another user's task is reported exactly like an
// unknown one.
//
// It imports the engine (flow), the return desk (business) and the run
// bookkeeping (runs), and no store package: the checkpoint store is given
// by the caller, and its optional powers (flow.Syncer, flow.Pruner,
// flow.Bufferer) are found by type assertion.
package returns
