package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"assistant/business"
)

// Inbox page sizes (docs/inbox.md "Inbox"): rows a page shows unless asked
// for fewer, and the most it shows.
const (
	DefaultInboxPage = 50
	MaxInboxPage     = 200
)

// InboxFilters are the filters an inbox takes, the default first:
// waiting for me, my own requests, all I may see (business.InboxWaiting,
// InboxMine, InboxAll).
var InboxFilters = []string{business.InboxWaiting, business.InboxMine, business.InboxAll}

// InboxOptions select one page of User's inbox: Filter (one of
// InboxFilters; "" is the first), the page after cursor After (zero: the
// first page), at most Limit rows (0: DefaultInboxPage).
type InboxOptions struct {
	User   string
	Filter string
	After  InboxCursor
	Limit  int
}

// InboxCursor names the last row of a page: its sort key (the draft's
// stored expiry) and task. The zero cursor is before the first row.
type InboxCursor struct {
	Key  string
	Task string
}

// InboxPage is one page of an inbox: its rows, soonest expiry first, and
// the cursor of the next page (nil on the last page). Now is the service
// clock the page was judged by.
type InboxPage struct {
	Filter string
	Rows   []business.InboxRow
	Next   *InboxCursor
	Now    time.Time
}

// Inbox returns one page of o.User's inbox: the return tasks recorded
// waiting that o.Filter selects (business.InboxQuery), read with the
// page's limit from the task records, drafts and trail (one query, not
// every task). The rows are what the records hold; the task's page
// (Show) judges the task as it is now. It writes nothing. Errors:
// ErrInvalid for an unknown filter, a limit out of 0..MaxInboxPage or
// a cursor no page gave (business.ValidInboxCursor); storage errors.
func (s *Service) Inbox(ctx context.Context, o InboxOptions) (*InboxPage, error) {
	if o.Filter == "" {
		o.Filter = InboxFilters[0]
	}
	if !slices.Contains(InboxFilters, o.Filter) {
		return nil, errorf(Hint{}, "%w: the inbox filter must be one of waiting, mine, all, not %q", ErrInvalid, o.Filter)
	}
	if o.Limit < 0 || o.Limit > MaxInboxPage {
		return nil, errorf(Hint{}, "%w: an inbox page holds 1 to %d rows, not %d", ErrInvalid, MaxInboxPage, o.Limit)
	}
	if o.Limit == 0 {
		o.Limit = DefaultInboxPage
	}
	if !business.ValidInboxCursor(o.After.Key, o.After.Task) || (o.After.Task != "" && ValidTaskID(o.After.Task) != nil) {
		return nil, errorf(Hint{}, "%w: the inbox page's cursor is not one an inbox page gave; start again from the first page", ErrInvalid)
	}
	now := s.now()
	rows, err := s.desk.Inbox(ctx, business.InboxQuery{User: o.User, Filter: o.Filter, Now: now, AfterKey: o.After.Key, AfterTask: o.After.Task, Limit: o.Limit + 1})
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	p := &InboxPage{Filter: o.Filter, Rows: rows, Now: now}
	if len(rows) > o.Limit {
		p.Rows = rows[:o.Limit]
		last := p.Rows[o.Limit-1]
		p.Next = &InboxCursor{Key: last.Key, Task: last.Task}
	}
	return p, nil
}

// OrderItem returns the item of the order of v, a view Show gave (so its
// reader may see the task): the order of the task's owner. "" when the
// owner holds no such order (the task fails at its lookup). Errors:
// storage errors.
func (s *Service) OrderItem(ctx context.Context, v *View) (string, error) {
	o, err := s.desk.Order(ctx, v.Order, v.User)
	if errors.Is(err, business.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return o.Item, nil
}

// PreviousDraft returns the version before the draft of v, a view Show
// gave (so its reader may see the task), as the business file keeps it:
// what a person compares the draft with before approving it. nil when
// v has no draft or its draft is the first version. Errors: storage
// errors.
func (s *Service) PreviousDraft(ctx context.Context, v *View) (*DraftView, error) {
	if v.Draft == nil || v.Draft.Version < 2 {
		return nil, nil
	}
	ds, err := s.desk.DraftVersions(ctx, v.Task)
	if err != nil {
		return nil, fmt.Errorf("drafts of %s: %w", v.Task, err)
	}
	for _, d := range ds {
		if d.Version == v.Draft.Version-1 {
			return &DraftView{DraftID: d.ID, Version: d.Version, OrderID: d.OrderID, Reason: d.Reason, ExpiresAt: d.ExpiresAt}, nil
		}
	}
	return nil, nil
}
