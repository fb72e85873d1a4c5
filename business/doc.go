// Package business is the return desk kept in business.sqlite (Open), or in
// the schema business of a PostgreSQL database (OpenPostgres, for several
// machines; docs/postgres.md): the orders a user may return, the drafts a return task prepares and the applications it
// submits, the decision trail of those tasks and the approver grants. The
// run bookkeeping (task records, leases, timeline, batch rows)
// keeps its tables in the same file but is package runs; it shares the
// opened file through Store.Handle, and Store.InTx gives both one commit.
//
// The flow in flow/returns calls it from nodes that may run more than once —
// after a crash, a kill -9 or a resume — so every write that is a side effect
// is keyed:
//
//   - a task has at most one draft per version: PrepareDraftVersion is
//     keyed by task id and version (UNIQUE (task_id, version)) and returns
//     the existing draft unchanged; a new version supersedes the older
//     ones in the same commit (one current draft per task, drafts_current);
//   - a decision is recorded once: RecordDecision is keyed by its id;
//   - a draft has at most one application: Submit is keyed by draft id
//     (applications.draft_id UNIQUE) and returns the existing application
//     with reused=true, even after the draft has expired.
//
// A typical use:
//
//	s, err := business.Open(ctx, "data/business.sqlite", business.Options{Create: true, Seed: ordersCSV})
//	o, err := s.Order(ctx, "A3003", "demo-user")
//	reason, err := s.Eligibility(ctx, o, time.Now()) // "" = may be returned
//	d, _, err := s.PrepareDraft(ctx, "return-25", o.ID, o.User, "size", business.DefaultDraftTTL, time.Now())
//	a, reused, err := s.Submit(ctx, d.ID, "demo-user", time.Now())
//
// Rules the store keeps (docs/storage.md):
//
//   - another user's order, draft or application is reported exactly like an
//     unknown one: ErrNotFound;
//   - every write transaction is BEGIN IMMEDIATE (on PostgreSQL: takes one
//     advisory lock first), so concurrent writers — in this process or
//     another — queue instead of failing part-way, and what a method read
//     cannot change before it commits;
//   - each statement is written for each database (queries_sqlite.go,
//     queries_postgres.go: the same arguments and columns in the same
//     order), and one method runs either, so every method behaves the same
//     on both;
//   - the file carries PRAGMA application_id (ApplicationID) and
//     user_version (SchemaVersion); a foreign, newer or corrupt file is
//     refused by Open and left byte-for-byte unchanged;
//   - times are stored as UTC RFC 3339 text with nine fraction digits.
//
// An orders import (docs/orders.md), file by file: import.go reads and
// checks a file (ParseOrders, OrdersFile) through a Table (table.go: its
// header and columns; table_records.go: its delimiter, its lines and
// their limits); import_rows.go checks one row
// (its id, its user, an order's rows that must agree); import_delivery.go
// and import_dates.go read its delivery times; import_group.go merges an
// order's rows (and keeps a pool of groups); import_mapping.go names columns by an export's headers;
// import_errors.go, import_report.go and import_needs.go are a refused
// file's error, its problems by kind and the import options it needs;
// import_orders.go is the import itself (ImportOrdersFile) and its
// report; import_spool.go, import_stream.go, upsert.go (which orders an
// import adds, updates or refuses) and upsert_stored.go (the stored orders
// it compares with, and its writes) keep the checked orders and write
// them.
package business
