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

// inboxQuery is the inbox statement with parameter markers mark ("?" on
// SQLite, "$" on PostgreSQL), numbered: user (1), now (2), filter (3),
// after key (4), after task (5), limit (6). The page is chosen first (one
// index probe of the trail per candidate), then only its rows are joined
// with their orders and counted.
func inboxQuery(mark string) string {
	q := `WITH page AS (
	SELECT t.task_id, t."user" AS owner, t.order_id, t.stage, t.approvals,
	       COALESCE(d.draft_id, '') AS draft_id, COALESCE(d.version, 0) AS version,
	       COALESCE(d.reason, t.reason) AS reason, COALESCE(d.expires_at, '') AS expires_at,
	       COALESCE(d.expires_at, '~') AS sort_key
	FROM tasks t
	LEFT JOIN drafts d ON d.task_id = t.task_id AND d.superseded_at IS NULL
	WHERE t.status = 'waiting' AND t.kind = 'return'
	  AND (t."user" = @1 OR (@3 <> 'mine' AND t."user" IN (SELECT g.owner FROM approver_grants g WHERE g.grantee = @1)))
	  AND (@3 <> 'waiting' OR (t.stage = 'draft_ready' AND d.expires_at > @2
	       AND NOT (t.approvals >= 2 AND t."user" = @1)
	       AND NOT EXISTS (SELECT 1 FROM decisions x WHERE x.task_id = t.task_id AND x.draft_id = d.draft_id
	                       AND x.by_user = @1 AND x.action = 'approve')))
	  AND (COALESCE(d.expires_at, '~') > @4 OR (COALESCE(d.expires_at, '~') = @4 AND t.task_id > @5))
	ORDER BY sort_key, t.task_id
	LIMIT @6)
SELECT p.task_id, p.owner, p.order_id, COALESCE(o.item, ''), p.stage, p.draft_id, p.version, p.reason,
       p.expires_at, p.approvals, p.sort_key,
       (SELECT COUNT(DISTINCT x.by_user) FROM decisions x WHERE x.task_id = p.task_id AND x.draft_id = p.draft_id
        AND x.action = 'approve' AND x.not_counted = '' AND NOT (p.approvals >= 2 AND x.by_user = p.owner))
FROM page p LEFT JOIN orders o ON o."user" = p.owner AND o.order_id = p.order_id
ORDER BY p.sort_key, p.task_id`
	return strings.ReplaceAll(q, "@", mark)
}

// Inbox reads one page of q.User's inbox (InboxQuery), reading only the
// page's rows and one index probe per candidate task. It writes nothing.
// Errors: the database's.
func (s *Store) Inbox(ctx context.Context, q InboxQuery) ([]InboxRow, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.inbox, q.User, formatTime(q.Now), q.Filter, q.AfterKey, q.AfterTask, q.Limit)
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
