package business

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Inbox filters (InboxQuery.Filter): which open return tasks a person's
// inbox lists.
const (
	// InboxWaiting lists the tasks the person may approve now: their own
	// and their granters' tasks waiting at an approval whose draft has not
	// expired, that the person has not approved yet, leaving out the
	// person's own tasks that need two approvers (four-eyes).
	InboxWaiting = "waiting"
	// InboxMine lists the person's own tasks that wait for someone.
	InboxMine = "mine"
	// InboxAll lists every waiting task of the person and of the owners
	// who granted them.
	InboxAll = "all"
)

// InboxQuery selects one page of an inbox: User's tasks as Filter says,
// judged at Now, soonest expiry first (tasks without a draft last), then
// by task id, after the row (AfterKey, AfterTask) of the previous page
// ("", "" for the first), at most Limit rows.
type InboxQuery struct {
	User      string
	Filter    string
	Now       time.Time
	AfterKey  string
	AfterTask string
	Limit     int
}

// ValidInboxCursor reports whether (key, task) can name the last row of
// an inbox page as InboxRow.Key and Task give it: both "" (the first
// page), or a task id and a stored expiry in the store's own time form
// (or "~", the key of a task without a draft). Anything else is a cursor
// no page gave.
func ValidInboxCursor(key, task string) bool {
	if key == "" && task == "" {
		return true
	}
	if task == "" || key == "" {
		return false
	}
	if key == "~" {
		return true
	}
	t, err := parseTime(key)
	return err == nil && formatTime(t) == key
}

// InboxRow is one task of an inbox page, as its records hold it. DraftID
// is "" (and Version 0, ExpiresAt zero) for a task with no draft yet; Item
// is "" for an order the owner does not hold. Given counts the distinct
// people whose approval of the current draft the trail holds and counts
// (not marked, and not the owner's on a task that needs two). Key is the
// row's sort key, for the next page's AfterKey.
type InboxRow struct {
	Task      string
	Owner     string
	Order     string
	Item      string
	Stage     string
	DraftID   string
	Version   int
	Reason    string
	ExpiresAt time.Time
	Needed    int
	Given     int
	Key       string
}

// inboxPage wraps page, the statement that chooses an inbox page's rows,
// in the statement that joins only those rows with their orders and
// counts the approvals of their current drafts. page is a derived table,
// not a WITH: on PostgreSQL a statement that begins with WITH counts as a
// write (pgdb.IsWrite), and the inbox is a read.
func inboxPage(page string) string {
	return `SELECT p.task_id, p.owner, p.order_id, COALESCE(o.item, ''), p.stage, p.draft_id, p.version, p.reason,
       p.expires_at, p.approvals, p.sort_key,
       (SELECT COUNT(DISTINCT x.by_user) FROM decisions x WHERE x.task_id = p.task_id AND x.draft_id = p.draft_id
        AND x.action = 'approve' AND x.not_counted = '' AND NOT (p.approvals >= 2 AND x.by_user = p.owner))
FROM (` + page + `) p LEFT JOIN orders o ON o."user" = p.owner AND o.order_id = p.order_id
ORDER BY p.sort_key, p.task_id`
}

// inboxWaitingQuery is the statement of the InboxWaiting filter with
// parameter markers mark ("?" on SQLite, "$" on PostgreSQL), numbered:
// user (1), now (2), after key (3), after task (4), limit (5). It walks
// the current drafts in expiry order from the later of now and the
// cursor (index drafts_current_expiry), keeps those whose task the
// person may approve now, and stops at the limit: a page reads about as
// many drafts as it shows, plus those of other people's tasks that
// expire in between, however many tasks wait.
func inboxWaitingQuery(mark string) string {
	q := inboxPage(`SELECT t.task_id, t."user" AS owner, t.order_id, t.stage, t.approvals,
	       d.draft_id, d.version, d.reason, d.expires_at, d.expires_at AS sort_key
	FROM drafts d CROSS JOIN tasks t
	WHERE t.task_id = d.task_id AND d.superseded_at IS NULL AND d.expires_at > @2 AND (d.expires_at, d.task_id) > (@3, @4)
	  AND t.status = 'waiting' AND t.kind = 'return' AND t.stage = 'draft_ready'
	  AND (t."user" = @1 OR t."user" IN (SELECT g.owner FROM approver_grants g WHERE g.grantee = @1))
	  AND NOT (t.approvals >= 2 AND t."user" = @1)
	  AND NOT EXISTS (SELECT 1 FROM decisions x WHERE x.task_id = t.task_id AND x.draft_id = d.draft_id
	                  AND x.by_user = @1 AND x.action = 'approve')
	ORDER BY d.expires_at, d.task_id
	LIMIT @5`)
	return strings.ReplaceAll(q, "@", mark)
}

// inboxQuery is the statement of the InboxMine and InboxAll filters with
// parameter markers mark, numbered: user (1), filter (2), after key (3),
// after task (4), limit (5). It reads the waiting tasks of the person
// (and, for InboxAll, of the owners who granted them) by the index of
// tasks by owner and status, with their current drafts, and sorts them:
// a page costs the owners' waiting tasks, not every task ever recorded.
// Tasks without a draft sort last (key "~").
func inboxQuery(mark string) string {
	q := inboxPage(`SELECT t.task_id, t."user" AS owner, t.order_id, t.stage, t.approvals,
	       COALESCE(d.draft_id, '') AS draft_id, COALESCE(d.version, 0) AS version,
	       COALESCE(d.reason, t.reason) AS reason, COALESCE(d.expires_at, '') AS expires_at,
	       COALESCE(d.expires_at, '~') AS sort_key
	FROM tasks t
	LEFT JOIN drafts d ON d.task_id = t.task_id AND d.superseded_at IS NULL
	WHERE t.status = 'waiting' AND t.kind = 'return'
	  AND t."user" IN (SELECT @1 UNION ALL SELECT g.owner FROM approver_grants g WHERE g.grantee = @1 AND @2 = 'all')
	  AND (COALESCE(d.expires_at, '~') > @3 OR (COALESCE(d.expires_at, '~') = @3 AND t.task_id > @4))
	ORDER BY sort_key, t.task_id
	LIMIT @5`)
	return strings.ReplaceAll(q, "@", mark)
}

// Inbox reads one page of q.User's inbox (InboxQuery) in one statement:
// for InboxWaiting the drafts that expire next, up to the page's limit
// (inboxWaitingQuery); for the others the owners' waiting tasks
// (inboxQuery). Only the page's rows are joined with their orders and
// counted. It writes nothing.
// Errors: the database's.
func (s *Store) Inbox(ctx context.Context, q InboxQuery) ([]InboxRow, error) {
	var rows *sql.Rows
	var err error
	if q.Filter == InboxWaiting {
		rows, err = s.h.Q().QueryContext(ctx, s.q.inboxWaiting, q.User, formatTime(q.Now), q.AfterKey, q.AfterTask, q.Limit)
	} else {
		rows, err = s.h.Q().QueryContext(ctx, s.q.inbox, q.User, q.Filter, q.AfterKey, q.AfterTask, q.Limit)
	}
	if err != nil {
		return nil, fmt.Errorf("inbox of %s: %w", q.User, err)
	}
	defer rows.Close()
	var out []InboxRow
	for rows.Next() {
		var r InboxRow
		var expires string
		var version, needed, given sql.NullInt64
		if err := rows.Scan(&r.Task, &r.Owner, &r.Order, &r.Item, &r.Stage, &r.DraftID, &version, &r.Reason, &expires, &needed, &r.Key, &given); err != nil {
			return nil, fmt.Errorf("inbox of %s: %w", q.User, err)
		}
		r.Version, r.Needed, r.Given = int(version.Int64), max(int(needed.Int64), 1), int(given.Int64)
		if expires != "" {
			if r.ExpiresAt, err = parseTime(expires); err != nil {
				return nil, fmt.Errorf("inbox of %s: task %s: %w", q.User, r.Task, err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbox of %s: %w", q.User, err)
	}
	return out, nil
}
