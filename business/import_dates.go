package business

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"assistant/internal/termtext"
)

// datePattern is a date format of the letters of docs/orders.md "Date
// formats" (DD.MM.YYYY, MM/DD/YYYY hh:mm A, YYYY-MM-DD HH:mm:ss Z): what
// a shop's export writes its delivery dates in.
type datePattern struct {
	text  string
	parts []datePart
	zone  bool // Z: the values carry their offset
	ampm  bool // A: the hour is on the 12-hour clock
	hour  bool // H or h
}

// datePart is one element of a datePattern: a field (its letter and how
// many digits it takes) or literal text.
type datePart struct {
	letter   rune // 'Y' 'M' 'D' 'H' 'h' 'm' 's' 'S' 'A' 'Z', or 0: lit
	min, max int  // digits a number takes
	lit      string
}

// compileDatePattern reads a date format. Its errors say what is wrong
// in the format's words.
func compileDatePattern(p string) (*datePattern, error) {
	dp := &datePattern{text: p}
	seen := map[rune]bool{}
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if !unicode.IsLetter(r) || r == 'T' {
			dp.parts = append(dp.parts, datePart{lit: string(r)})
			i += size
			continue
		}
		n := 1
		for i+n < len(p) && rune(p[i+n]) == r {
			n++
		}
		i += n * size
		part, err := patternField(r, n)
		if err != nil {
			return nil, err
		}
		if seen[part.letter] {
			return nil, fmt.Errorf("%s appears twice", letterName(part.letter))
		}
		seen[part.letter] = true
		dp.parts = append(dp.parts, part)
	}
	switch {
	case !seen['M'] && seen['m'] && !seen['H'] && !seen['h']:
		return nil, errors.New("mm is the minutes; the month is MM")
	case !seen['Y'] || !seen['M'] || !seen['D']:
		return nil, errors.New("a date format needs a year (YYYY), a month (MM) and a day (DD)")
	case seen['H'] && seen['h']:
		return nil, errors.New("the hour appears twice (HH and hh)")
	case seen['m'] && !seen['H'] && !seen['h']:
		return nil, errors.New("minutes (mm) need an hour (HH) before them")
	case seen['s'] && !seen['m']:
		return nil, errors.New("seconds (ss) need minutes (mm)")
	case seen['S'] && !seen['s']:
		return nil, errors.New("fractions of a second (SSS) need seconds (ss)")
	case seen['A'] && !seen['h']:
		return nil, errors.New("the AM/PM letter A goes with the 12-hour clock's hh, not HH")
	}
	for i, part := range dp.parts {
		if part.letter != 0 && part.min != part.max && i+1 < len(dp.parts) && dp.parts[i+1].letter != 0 && dp.parts[i+1].letter != 'A' && dp.parts[i+1].letter != 'Z' {
			// D then MM: where one ends and the next begins is unknown.
			return nil, fmt.Errorf("%s of one or two digits needs a separator after it; write its two-digit form", letterName(part.letter))
		}
	}
	dp.zone, dp.ampm, dp.hour = seen['Z'], seen['A'], seen['H'] || seen['h']
	return dp, nil
}

// patternField is the field of n letters r (y and d read as Y and D, a as
// A, as other date formats write them).
func patternField(r rune, n int) (datePart, error) {
	switch r {
	case 'y':
		r = 'Y'
	case 'd':
		r = 'D'
	case 'a':
		r = 'A'
	}
	one := func(max int) (datePart, error) {
		switch n {
		case 1:
			return datePart{letter: r, min: 1, max: max}, nil
		case 2:
			return datePart{letter: r, min: 2, max: 2}, nil
		}
		return datePart{}, fmt.Errorf("%s: write %c%c or %c", strings.Repeat(string(r), n), r, r, r)
	}
	switch r {
	case 'Y':
		switch n {
		case 4:
			return datePart{letter: r, min: 4, max: 4}, nil
		case 2:
			return datePart{letter: r, min: 2, max: 2}, nil
		}
		return datePart{}, fmt.Errorf("%s: write YYYY (or YY for 20YY)", strings.Repeat("Y", n))
	case 'M':
		if n > 2 {
			return datePart{}, fmt.Errorf("%s: month names are not read; write MM", strings.Repeat("M", n))
		}
		return one(2)
	case 'D', 'H', 'h', 'm', 's':
		return one(2)
	case 'S':
		if n > 9 {
			return datePart{}, errors.New("at most nine S (nanoseconds)")
		}
		return datePart{letter: r, min: n, max: n}, nil
	case 'A', 'Z':
		if n > 1 && !(r == 'Z' && n == 2) {
			return datePart{}, fmt.Errorf("%s: write %c", strings.Repeat(string(r), n), r)
		}
		return datePart{letter: r}, nil
	}
	return datePart{}, fmt.Errorf("%s is not a letter of a date format (YYYY YY MM M DD D HH H hh h mm m ss s S A Z; other letters than T go in no format)", termtext.Quote(string(r)))
}

// letterName names a field in a message.
func letterName(r rune) string {
	switch r {
	case 'Y':
		return "the year (YYYY)"
	case 'M':
		return "the month (MM)"
	case 'D':
		return "the day (DD)"
	case 'H', 'h':
		return "the hour (HH)"
	case 'm':
		return "the minutes (mm)"
	case 's':
		return "the seconds (ss)"
	case 'S':
		return "the fraction (SSS)"
	case 'A':
		return "AM or PM (A)"
	}
	return "the offset (Z)"
}

// dateFields are the values read from a time by a datePattern.
type dateFields struct {
	year, month, day, hour, min, sec, nsec int
	pm                                     bool
	offset                                 int // seconds east of UTC
}

// read reads s as p says, in UTC: a value without an offset (p has no Z)
// is a wall time in loc (nil: refused, as ParseDeliveryTime refuses
// one). Its errors are ParseDeliveryTime's kinds: *timeError.
func (p *datePattern) read(s string, loc *time.Location) (time.Time, error) {
	f, ok := p.scan(s)
	if !ok {
		return time.Time{}, &timeError{kind: kindDelivered, msg: fmt.Sprintf("delivered_at %s does not match the date format %s", termtext.Quote(s), p.text)}
	}
	if p.ampm {
		if f.hour < 1 || f.hour > 12 {
			return time.Time{}, p.notADate(s, fmt.Sprintf("hour %d on the 12-hour clock", f.hour))
		}
		f.hour %= 12
		if f.pm {
			f.hour += 12
		}
	}
	wall := time.Date(f.year, time.Month(f.month), f.day, f.hour, f.min, f.sec, f.nsec, time.UTC)
	switch {
	case f.month < 1 || f.month > 12:
		return time.Time{}, p.notADate(s, fmt.Sprintf("month %d", f.month))
	case f.day < 1 || wall.Day() != f.day:
		return time.Time{}, p.notADate(s, fmt.Sprintf("day %d of month %d", f.day, f.month))
	case f.hour > 23 || f.min > 59 || f.sec > 59:
		return time.Time{}, p.notADate(s, fmt.Sprintf("time %02d:%02d:%02d", f.hour, f.min, f.sec))
	}
	if p.zone {
		if f.offset > maxOffset || f.offset < -maxOffset {
			return time.Time{}, &timeError{kind: kindOffset, msg: fmt.Sprintf("delivered_at %s has an offset beyond ±14:00", termtext.Quote(s))}
		}
		return storedTime(wall.Add(-time.Duration(f.offset) * time.Second)), nil
	}
	if loc == nil {
		return time.Time{}, noZone(s)
	}
	return inLocation(s, wall, loc)
}

// notADate is the error of a value that matches p's shape but names no
// time (what: the part that is out of range).
func (p *datePattern) notADate(s, what string) error {
	return &timeError{kind: kindDelivered, msg: fmt.Sprintf("delivered_at %s is not a date in the format %s (%s)", termtext.Quote(s), p.text, what)}
}

// scan reads the fields of s by p's parts; false when s does not have
// p's shape.
func (p *datePattern) scan(s string) (dateFields, bool) {
	var f dateFields
	i := 0
	for _, part := range p.parts {
		switch part.letter {
		case 0:
			if part.lit == " " {
				// A space stands for any run of spaces: exports pad.
				n := 0
				for i < len(s) && s[i] == ' ' {
					i, n = i+1, n+1
				}
				if n == 0 {
					return f, false
				}
				continue
			}
			if !strings.HasPrefix(s[i:], part.lit) {
				return f, false
			}
			i += len(part.lit)
		case 'A':
			if len(s) < i+2 {
				return f, false
			}
			switch strings.ToUpper(s[i : i+2]) {
			case "AM":
			case "PM":
				f.pm = true
			default:
				return f, false
			}
			i += 2
		case 'Z':
			n, off, ok := readOffset(s[i:])
			if !ok {
				return f, false
			}
			i, f.offset = i+n, off
		default:
			n := 0
			v := 0
			for n < part.max && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '9' {
				v = v*10 + int(s[i+n]-'0')
				n++
			}
			if n < part.min {
				return f, false
			}
			i += n
			switch part.letter {
			case 'Y':
				if part.max == 2 {
					v += 2000
				}
				f.year = v
			case 'M':
				f.month = v
			case 'D':
				f.day = v
			case 'H', 'h':
				f.hour = v
			case 'm':
				f.min = v
			case 's':
				f.sec = v
			case 'S':
				for range 9 - n {
					v *= 10
				}
				f.nsec = v
			}
		}
	}
	return f, i == len(s)
}

// readOffset reads a zone offset at the start of s: Z (or z), or a sign
// and hours with minutes (+01:00, +0100) or without (+01). It returns the
// bytes read and the offset in seconds east of UTC.
func readOffset(s string) (int, int, bool) {
	if strings.HasPrefix(s, "Z") || strings.HasPrefix(s, "z") {
		return 1, 0, true
	}
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') || !isDigits(s[1:3]) {
		return 0, 0, false
	}
	h, m, n := int(s[1]-'0')*10+int(s[2]-'0'), 0, 3
	switch {
	case len(s) >= 6 && s[3] == ':' && isDigits(s[4:6]):
		m, n = int(s[4]-'0')*10+int(s[5]-'0'), 6
	case len(s) >= 5 && isDigits(s[3:5]):
		m, n = int(s[3]-'0')*10+int(s[4]-'0'), 5
	}
	if m > 59 {
		return 0, 0, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return n, off, true
}

// isDigits reports whether s is ASCII digits only.
func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// timeError is a delivery time that cannot be read, with the kind of its
// problem (a refusal groups the rows by it).
type timeError struct {
	kind problemKind
	msg  string
}

func (e *timeError) Error() string { return e.msg }
