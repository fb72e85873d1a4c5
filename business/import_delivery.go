package business

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"assistant/internal/termtext"
)

// Delivery time layouts (docs/orders.md "Dates"): with a zone, and without
// one (read in ParseOptions.Location).
var (
	zonedLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05 -07:00", "2006-01-02 15:04:05Z07:00"}
	localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"}
)

// The range of delivery times an orders file may hold: a time before
// MinDeliveredAt (0001-01-01, the zero time, a typo'd year) or more than
// MaxDeliveredAhead after the import is refused with its line, not stored.
var MinDeliveredAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxDeliveredAhead is how far after the import a delivery time may be
// (clocks and time zones of a shop's systems differ by hours, not days).
const MaxDeliveredAhead = 24 * time.Hour

// delivered reads the delivery of a row: delivered_at (a time or a date,
// in the mapping's date format if it has one) or delivered_days_ago
// (whole days before ParseOptions.Now); nil when empty (not delivered).
// A time outside [MinDeliveredAt, Now + MaxDeliveredAhead] is an error.
// An error comes with the kind of its problem.
func (f *OrdersFile) delivered(at, days string) (*time.Time, problemKind, error) {
	if days != "" {
		d, err := daysAgo(days)
		if err != nil {
			return nil, kindDaysAgo, err
		}
		t := storedTime(f.opts.Now.Add(-time.Duration(d) * 24 * time.Hour)).Truncate(DeliveryPrecision)
		if t.Before(MinDeliveredAt) {
			return nil, kindDaysAgo, fmt.Errorf("delivered_days_ago %s is before %s; a delivery time must be from %s on", days, MinDeliveredAt.Format(time.DateOnly), MinDeliveredAt.Format(time.DateOnly))
		}
		return &t, 0, nil
	}
	if at == "" {
		return nil, 0, nil
	}
	if at == f.lastAt && f.lastTime != nil {
		return f.lastTime, 0, nil // shared: nothing changes a stored order's time
	}
	var (
		t   time.Time
		err error
	)
	if f.pattern != nil {
		t, err = f.pattern.read(at, f.opts.Location)
	} else {
		t, err = ParseDeliveryTime(at, f.opts.Location)
	}
	if err != nil {
		kind := kindDelivered
		var te *timeError
		if errors.As(err, &te) {
			kind = te.kind
		}
		return nil, kind, err
	}
	t = t.Truncate(DeliveryPrecision)
	switch {
	case t.Before(MinDeliveredAt):
		return nil, kindDeliveredRange, fmt.Errorf("delivered_at %s is before %s; a delivery time must be from %s on", termtext.Quote(at), MinDeliveredAt.Format(time.DateOnly), MinDeliveredAt.Format(time.DateOnly))
	case t.After(f.opts.Now.Add(MaxDeliveredAhead)):
		return nil, kindDeliveredRange, fmt.Errorf("delivered_at %s is more than %s after now (%s); a delivery cannot be in the future", termtext.Quote(at), MaxDeliveredAhead, f.opts.Now.UTC().Format(time.RFC3339))
	}
	f.lastAt, f.lastTime = at, &t
	return &t, 0, nil
}

// daysAgo reads a delivered_days_ago value: a whole number of days from
// 0 to 36500.
func daysAgo(s string) (int, error) {
	d, err := strconv.Atoi(s)
	if err != nil || d < 0 || d > 36500 {
		return 0, fmt.Errorf("delivered_days_ago %s: want empty or a whole number of days >= 0", termtext.Quote(s))
	}
	return d, nil
}

// DeliveryPrecision is what an import keeps of a delivery time: the
// millisecond, as JSON output shows every time (cmd.JSONTimeLayout), so
// that a time shown and imported again is the one stored (finer digits of
// a file are dropped, not rounded).
const DeliveryPrecision = time.Millisecond

// ParseDeliveryTime reads a delivery time of an orders file, in UTC:
// RFC 3339, "YYYY-MM-DD HH:MM:SS ±hhmm" (Shopify's), a time without a zone
// ("YYYY-MM-DD HH:MM[:SS]", with a space or 'T') in loc, or a date
// "YYYY-MM-DD" (its midnight in loc). A time or a date without a zone and a
// nil loc is an error that asks for --timezone: its meaning is not
// guessed; nor is a wall time loc's clocks skip or show twice (an error
// each), nor an offset beyond ±14:00. RFC 3339's lower-case t and z are
// read. It does not check the range (see MinDeliveredAt).
func ParseDeliveryTime(s string, loc *time.Location) (time.Time, error) {
	if len(s) == len(time.DateOnly) {
		return parseDate(s, loc)
	}
	// RFC 3339 allows a lower-case t and z (section 5.6); Go reads only
	// upper case.
	norm := s
	if len(norm) > 10 && norm[10] == 't' {
		norm = norm[:10] + "T" + norm[11:]
	}
	if strings.HasSuffix(norm, "z") {
		norm = norm[:len(norm)-1] + "Z"
	}
	for _, l := range zonedLayouts {
		if t, err := time.Parse(l, norm); err == nil {
			if _, off := t.Zone(); off > maxOffset || off < -maxOffset {
				return time.Time{}, &timeError{kind: kindOffset, msg: fmt.Sprintf("delivered_at %s has the offset %s; offsets go from -14:00 to +14:00", termtext.Quote(s), t.Format("-07:00"))}
			}
			return storedTime(t), nil
		}
	}
	for _, l := range localLayouts {
		wall, err := time.Parse(l, norm)
		if err != nil {
			continue
		}
		if loc == nil {
			return time.Time{}, noZone(s)
		}
		return inLocation(s, wall, loc)
	}
	return time.Time{}, badTime(s)
}

// maxOffset is the largest offset from UTC of a time zone in use (Kiribati,
// +14:00; the lowest is -12:00): a larger one is a typo, not a zone.
const maxOffset = 14 * 3600

// inLocation returns the instant at which the clocks of loc show wall
// (its fields read as UTC): s, as the file has it, names it in errors. A
// wall time the clocks skip (a change to summer time) or show twice (back
// to winter time) is refused, not guessed: the file must say the offset.
func inLocation(s string, wall time.Time, loc *time.Location) (time.Time, error) {
	// The offsets in force a day before and a day after: a zone changes
	// its offset at most once within two days.
	var found []time.Time
	for _, at := range []time.Time{wall.Add(-24 * time.Hour), wall.Add(24 * time.Hour)} {
		_, off := at.In(loc).Zone()
		c := wall.Add(-time.Duration(off) * time.Second)
		if _, o := c.In(loc).Zone(); o == off && (len(found) == 0 || !found[0].Equal(c)) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return time.Time{}, &timeError{kind: kindClock, msg: fmt.Sprintf("delivered_at %s does not exist in %s (the clocks skip it); write it with its offset", termtext.Quote(s), loc)}
	case 2:
		a, b := found[0].In(loc), found[1].In(loc)
		return time.Time{}, &timeError{kind: kindClock, msg: fmt.Sprintf("delivered_at %s occurs twice in %s (%s and %s: the clocks go back); write it with its offset", termtext.Quote(s), loc, a.Format("-07:00"), b.Format("-07:00"))}
	}
	return storedTime(found[0]), nil
}

// parseDate reads a date YYYY-MM-DD: its midnight in loc, which must be
// given.
func parseDate(s string, loc *time.Location) (time.Time, error) {
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		return time.Time{}, badTime(s)
	}
	if loc == nil {
		return time.Time{}, noZone(s)
	}
	wall, _ := time.Parse(time.DateOnly, s)
	return inLocation(s, wall, loc)
}

// noZone is the error of a date or time without a zone read without a
// location (NeedTimezone).
func noZone(s string) error {
	return &timeError{kind: kindNoZone, msg: fmt.Sprintf("delivered_at %s has no time zone", termtext.Quote(s))}
}

func badTime(s string) error {
	return &timeError{kind: kindDelivered, msg: fmt.Sprintf("delivered_at %s is not a date YYYY-MM-DD, an RFC 3339 time or YYYY-MM-DD HH:MM:SS [±hhmm]", termtext.Quote(s))}
}
