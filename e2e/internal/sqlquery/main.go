// Command sqlquery runs one read-only query on a SQLite file and prints
// the first column of its first row as fmt.Sprint prints it, with nothing
// after. The end-to-end tests (package e2e) build it and ask it what the
// stores hold: in a process of its own a query runs at full speed, while
// in the test binary, built with -race, the SQLite library runs every
// pointer check the race build adds, many times slower.
//
//	sqlquery FILE QUERY < ARGS
//
// ARGS is a JSON array of the query's arguments (strings, integers,
// numbers, null). Exit 1, with the error on stderr, when the file cannot
// be opened or the query fails or returns no row.
package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sqlquery FILE QUERY < ARGS")
		os.Exit(2)
	}
	v, err := query(os.Args[1], os.Args[2], os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(v)
}

// query runs q on the file at path, read only, with the arguments read
// as a JSON array from in, and returns its first value as text.
func query(path, q string, in io.Reader) (string, error) {
	args, err := readArgs(in)
	if err != nil {
		return "", err
	}
	// The DSN the tests have always read the stores with: read only, and
	// waiting for a writer's lock rather than failing at once.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v any
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}

// readArgs decodes a JSON array of arguments: integers as int64, other
// numbers as float64.
func readArgs(in io.Reader) ([]any, error) {
	b, err := io.ReadAll(in)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw []any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	for i, a := range raw {
		n, ok := a.(json.Number)
		if !ok {
			continue
		}
		if v, err := n.Int64(); err == nil {
			raw[i] = v
		} else if raw[i], err = n.Float64(); err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	return raw, nil
}
