package returns_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/runs"
)

// TestReadDecideFile: a decide file checked by ReadDecideFile and read
// again gives the rows, duplicates marked, and the fingerprint that
// ParseDecisions gives, and the errors it gives for a bad file.
func TestReadDecideFile(t *testing.T) {
	for name, file := range map[string]string{
		"plain":      "task,action\nr1,approve\nr2,cancel\n",
		"duplicates": "task,action,draft\nr1,approve,\nr2,cancel,\nr1,cancel,\nr3,approve,d1\nr2,approve,\nr1,approve,\n",
		"quoted":     "action;draft;task\n\"approve\";;\"r1\"\ncancel;\"d2\";r2\n",
		"bad":        "task,action\nr1,approve\nr2,maybe\n",
		"empty":      "task,action\n",
		"header":     "order,reason\nP1,x\n",
	} {
		t.Run(name, func(t *testing.T) {
			want, wantFP, wantErr := returns.ParseDecisions(strings.NewReader(file))
			f, err := returns.ReadDecideFile(strings.NewReader(file))
			if wantErr != nil {
				if err == nil || err.Error() != wantErr.Error() || !errors.Is(err, returns.ErrInvalid) {
					t.Fatalf("ReadDecideFile: %v; want ParseDecisions' %v", err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []runs.BatchRow
			if err := returns.EachDecision(f, func(r runs.BatchRow) error { got = append(got, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if f.Rows != len(want) || f.Fingerprint != wantFP || !reflect.DeepEqual(got, want) {
				t.Fatalf("ReadDecideFile: %d rows, fingerprint %s, rows %+v;\nwant %d, %s, %+v", f.Rows, f.Fingerprint, got, len(want), wantFP, want)
			}
		})
	}
}

// changing is a file whose bytes change once it was read through: what a
// decide file edited between its check and the run reads like.
// Its first from becomes to.
type changing struct {
	*bytes.Reader
	data     []byte
	from, to string
	reads    int
}

func (c *changing) Seek(off int64, whence int) (int64, error) {
	c.reads++
	if c.reads == 1 {
		c.data = bytes.Replace(c.data, []byte(c.from), []byte(c.to), 1)
		c.Reader = bytes.NewReader(c.data)
	}
	return c.Reader.Seek(off, whence)
}

// TestDecideFileChanged: a decide file whose bytes changed between its
// check and the run is refused (ErrInvalid, "changed while it was read",
// whatever the change: other good rows, or a row the check would refuse)
// and nothing is decided: no run is made, the task still waits.
func TestDecideFileChanged(t *testing.T) {
	for name, change := range map[string][2]string{
		"other task": {"b1,", "b2,"},
		"bad row":    {"b1,approve", "b1,maybe"},
		"bad id":     {"b1,", "b 1,"},
		"no rows":    {"b1,approve\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			svc, b := setupSQLite(t)
			startBatch(t, svc, b) // b1 waits for approval
			data := []byte("task,action\nb1,approve\n")
			src := &changing{Reader: bytes.NewReader(data), data: data, from: change[0], to: change[1]}
			f, err := returns.ReadDecideFile(src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.StartDecide(b.ctx, returns.DecideOptions{User: user, File: f})
			if !errors.Is(err, returns.ErrInvalid) || !strings.Contains(err.Error(), "changed while it was read") {
				t.Fatalf("StartDecide of a changed file: %v; want ErrInvalid, changed", err)
			}
			if _, err := svc.Show(b.ctx, returns.DecideID(user, f.Fingerprint), user); !errors.Is(err, returns.ErrNotFound) {
				t.Fatalf("show of the refused run: %v; want ErrNotFound (nothing made)", err)
			}
			if v, err := svc.Show(b.ctx, "b1", user); err != nil || v.Status != returns.StatusWaiting {
				t.Fatalf("b1 after the refused run: %v, %v; want waiting", v, err)
			}
			var _ io.ReadSeeker = src
		})
	}
}

// TestDecideFileRefusesColumnsItDoesNotRead: a decide file with a column
// decide does not read (a version column, which named a draft version
// that was silently ignored) is refused whole, naming the column; the
// columns it reads, their aliases and a trailing empty column pass.
func TestDecideFileRefusesColumnsItDoesNotRead(t *testing.T) {
	for _, c := range []struct {
		name, file, refused string
	}{
		{"version", "task,action,version\nr1,approve,1\n", `"version"`},
		{"draft and version", "task,action,draft,version\nr1,approve,d1,1\n", `"version"`},
		{"a note", "Task;Action;Note\nr1;approve;ok\n", `"Note"`},
		{"aliases", "task id,decision,draft id\nr1,approve,d1\n", ""},
		{"trailing delimiter", "task,action,\nr1,approve,\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := returns.ParseDecisions(strings.NewReader(c.file))
			_, rerr := returns.ReadDecideFile(strings.NewReader(c.file))
			if c.refused == "" {
				if err != nil || rerr != nil {
					t.Fatalf("refused: %v / %v", err, rerr)
				}
				return
			}
			for _, e := range []error{err, rerr} {
				if !errors.Is(e, returns.ErrInvalid) || !strings.Contains(e.Error(), c.refused) || !strings.Contains(e.Error(), "no decision was given") {
					t.Errorf("%q: %v; want invalid input naming %s", c.file, e, c.refused)
				}
			}
		})
	}
}
