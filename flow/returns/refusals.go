package returns

import (
	"errors"

	"assistant/business"
	"assistant/runs"
)

// This file holds the hints of the stores' refusals of a file or a schema
// (corrupt, another program's, a newer build's, not writable, of another
// data dir, a -wal not written for it). The stores say what they found
// and that nothing was changed; what to do next is a Hint here, so each
// front end words its commands its own way.

// refusalHints are the hints of the stores' refusals, by the sentinel the
// refusal matches (errors.Is), in order: the first that matches gives the
// hint. The PostgreSQL refusals come first: they match the SQLite
// sentinels too.
var refusalHints = []struct {
	matches []error
	hint    Hint
}{
	{[]error{business.ErrPGSchemaRefused, business.ErrPairMismatch}, Hint{Before: "restore both schemas from one pg_dump with pg_restore (docs/postgres.md \"Backup\"), or drop both to start afresh"}},
	{[]error{business.ErrPGSchemaRefused, business.ErrNewerSchema}, Hint{Before: "upgrade assistant to the version that wrote it"}},
	{[]error{business.ErrPGSchemaRefused}, Hint{Before: "use another database, or drop that schema if nothing in it is needed"}},
	{[]error{business.ErrPairMismatch}, Hint{Before: "put back the file that belongs with the other (restore both from the same backup, which",
		Then: &Hint{Do: DoBackup, Args: []string{"DIR"}, After: "makes), or move both aside to start afresh"}}},
	{[]error{business.ErrForeignWAL}, Hint{Before: "if the -wal file was copied here, move it aside; else restore the data dir from a backup, which",
		Then: &Hint{Do: DoBackup, Args: []string{"DIR"}, After: "makes"}}},
	{[]error{business.ErrCorrupt}, Hint{Before: "run", Do: DoVerify, After: "to see what is damaged, then restore the data dir from a backup (which",
		Then: &Hint{Do: DoBackup, Args: []string{"DIR"}, After: "makes) or move the file aside"}}},
	{[]error{business.ErrForeignFile}, Hint{Before: "move it aside, or use another data dir"}},
	{[]error{business.ErrNewerSchema}, Hint{Before: "upgrade assistant to the version that wrote it"}},
	{[]error{business.ErrOlderSchema}, Hint{Before: "open the data dir once with an operation of this build that writes it (any but verify and backup), which migrates it, then try again"}},
	{[]error{business.ErrReadOnly}, Hint{Before: "make the data dir and its files writable (chmod u+w), or use another data dir"}},
	{[]error{ErrLostBusiness}, Hint{Before: "restore business.sqlite from a backup, or move both files away to start afresh"}},
	{[]error{runs.ErrLostCheckpoints}, Hint{Before: "restore checkpoints.sqlite from a backup, or move both files away to start afresh"}},
}

// refusalHint is the hint of the store refusal err holds (refusalHints);
// ok is false for any other error.
func refusalHint(err error) (h Hint, ok bool) {
	for _, r := range refusalHints {
		if matchesAll(err, r.matches) {
			return r.hint, true
		}
	}
	return Hint{}, false
}

// matchesAll reports whether errors.Is finds every one of targets in err.
func matchesAll(err error, targets []error) bool {
	for _, t := range targets {
		if !errors.Is(err, t) {
			return false
		}
	}
	return true
}

// refused is a store's refusal with the hint refusalHints gives it: its
// message, its chain and its kind unchanged.
type refused struct {
	err error
	h   Hint
}

func (e *refused) Error() string { return e.err.Error() }

func (e *refused) Unwrap() error { return e.err }

func (e *refused) hint() (Hint, bool) { return e.h, true }
