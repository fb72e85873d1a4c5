package sqlstore

import (
	"strconv"
	"strings"
)

// The parameter markers of statements built at run time (an IN list, a
// multi-row VALUES), as each database writes them: SQLite's ?, numbered
// by position, and PostgreSQL's $n.

// SQLiteParams returns n SQLite parameters: "?, ?, ?".
func SQLiteParams(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// SQLiteRows returns n rows of width SQLite parameters each:
// "(?, ?), (?, ?)".
func SQLiteRows(n, width int) string {
	return strings.TrimSuffix(strings.Repeat("("+SQLiteParams(width)+"), ", n), ", ")
}

// SQLiteNumbered returns n SQLite parameters numbered from first:
// "?3, ?4, ?5", for a statement that names one parameter in many places.
func SQLiteNumbered(first, n int) string {
	return numbered("?", first, n)
}

// PostgresParams returns n PostgreSQL parameters numbered from first:
// "$3, $4, $5".
func PostgresParams(first, n int) string {
	return numbered("$", first, n)
}

// numbered returns n parameters numbered from first, each mark and its
// number: "$3, $4".
func numbered(mark string, first, n int) string {
	var b strings.Builder
	b.Grow(n * 6)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(mark)
		b.WriteString(strconv.Itoa(first + i))
	}
	return b.String()
}

// PostgresRows returns n rows of width PostgreSQL parameters each,
// numbered from first: "($1, $2), ($3, $4)".
func PostgresRows(first, n, width int) string {
	var b strings.Builder
	b.Grow(n * (width*7 + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		b.WriteString(PostgresParams(first+i*width, width))
		b.WriteByte(')')
	}
	return b.String()
}
