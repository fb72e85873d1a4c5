package business

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"assistant/internal/sqlstore"
)

// seedHeader is the required first record of a seed CSV.
var seedHeader = []string{"order_id", "user", "item", "delivered_days_ago", "final_sale", "open_application"}

// seedOrder is one validated row of the teaching orders CSV.
type seedOrder struct {
	line            int
	orderID         string
	user            string
	item            string
	deliveredDays   int // days before the file's creation; -1 = not delivered
	finalSale       bool
	openApplication bool
}

// SeedTaskPrefix starts the task id of a draft the seed creates for an order
// with open_application=true: task "seed-A3009" owns draft "d_seed-A3009",
// submitted as application "app_seed-A3009".
const SeedTaskPrefix = "seed-"

// parseSeed reads and validates the teaching orders CSV. Columns, in order:
//
//	order_id            unique, non-empty
//	user                non-empty
//	item                non-empty, any UTF-8
//	delivered_days_ago  empty = not delivered yet, else an integer >= 0
//	final_sale          true|false (empty = false)
//	open_application    true|false (empty = false): seed a pending application
//
// Lines starting with '#' are comments. An error names the line.
func parseSeed(data []byte) ([]seedOrder, error) {
	if len(data) == 0 {
		return nil, nil
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = len(seedHeader)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("seed orders: header: %w", err)
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff") // a BOM from a spreadsheet
	if !slices.Equal(header, seedHeader) {
		return nil, fmt.Errorf("seed orders: header is %q, want %q", strings.Join(header, ","), strings.Join(seedHeader, ","))
	}
	var orders []seedOrder
	seen := map[string]int{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("seed orders: %w", err) // csv.ParseError names the line
		}
		line, _ := r.FieldPos(0)
		o, err := parseSeedRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("seed orders: line %d: %w", line, err)
		}
		if first, dup := seen[o.orderID]; dup {
			return nil, fmt.Errorf("seed orders: line %d: order %s already on line %d", line, o.orderID, first)
		}
		seen[o.orderID] = line
		o.line = line
		orders = append(orders, o)
	}
	return orders, nil
}

func parseSeedRecord(rec []string) (seedOrder, error) {
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	o := seedOrder{orderID: rec[0], user: rec[1], item: rec[2], deliveredDays: -1}
	for i, v := range rec[:3] {
		if v == "" {
			return o, fmt.Errorf("%s is empty", seedHeader[i])
		}
	}
	if rec[3] != "" {
		d, err := strconv.Atoi(rec[3])
		if err != nil || d < 0 {
			return o, fmt.Errorf("delivered_days_ago %q: want empty or a whole number >= 0", rec[3])
		}
		o.deliveredDays = d
	}
	var err error
	if o.finalSale, err = parseSeedBool(seedHeader[4], rec[4]); err != nil {
		return o, err
	}
	if o.openApplication, err = parseSeedBool(seedHeader[5], rec[5]); err != nil {
		return o, err
	}
	return o, nil
}

func parseSeedBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%s %q: want true or false", name, v)
}

// loadSeed inserts the seed orders, marked teaching, inside the
// schema-creating transaction q, with the statements sq of its database.
// Dates are relative to now (the file's creation): delivered_at = now − days.
// An order with open_application gets a draft and a pending application of
// the task SeedTaskPrefix+order_id, created at now. marked says the orders
// table has the teaching column (SQLite files made with fewer migrations,
// as tests make them, do not: migration 0005 marks their orders later).
func loadSeed(ctx context.Context, q sqlstore.Querier, sq *queries, orders []seedOrder, now time.Time, marked bool) error {
	insert := sq.insertSeedOrder
	if !marked {
		insert = sqliteInsertUnmarkedSeedOrder
	}
	for _, o := range orders {
		var delivered any // NULL: not delivered
		if o.deliveredDays >= 0 {
			delivered = formatTime(now.Add(-time.Duration(o.deliveredDays) * 24 * time.Hour))
		}
		if _, err := q.ExecContext(ctx, insert,
			o.orderID, o.user, o.item, delivered, flag(o.finalSale)); err != nil {
			return fmt.Errorf("seed orders: line %d: %w", o.line, err)
		}
		if !o.openApplication {
			continue
		}
		taskID := SeedTaskPrefix + o.orderID
		draftID := "d_" + taskID
		if _, err := q.ExecContext(ctx, sq.insertSeedDraft,
			draftID, taskID, o.orderID, o.user, "seed", formatTime(now), formatTime(now.Add(DefaultDraftTTL))); err != nil {
			return fmt.Errorf("seed orders: line %d: draft: %w", o.line, err)
		}
		if _, err := q.ExecContext(ctx, sq.insertApplication,
			"app_"+taskID, draftID, o.orderID, o.user, ReviewPending, formatTime(now)); err != nil {
			return fmt.Errorf("seed orders: line %d: application: %w", o.line, err)
		}
	}
	return nil
}

// SeedHasOrder reports whether the teaching orders seed (the CSV of
// Options.Seed; nil or empty: none) gives user an order with id orderID:
// whether a business file made now with that seed would hold it. Errors:
// the seed's own (a line that does not parse).
func SeedHasOrder(seed []byte, user, orderID string) (bool, error) {
	orders, err := parseSeed(seed)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(orders, func(o seedOrder) bool { return o.user == user && o.orderID == orderID }), nil
}
