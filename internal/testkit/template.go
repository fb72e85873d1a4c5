package testkit

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// FileTemplate is a file a test binary makes once and copies for each
// test that needs one: a store created and seeded by running every
// migration costs a fifth of a second under -race, a copy of its bytes
// next to nothing. Make it with NewFileTemplate; it is safe for
// concurrent use. A copy is the same bytes, so every copy of a store
// carries the same data dir identity: use one only where a test's file
// is alone in its directory.
type FileTemplate struct {
	once   sync.Once
	create func(path string) error
	b      []byte
	err    error
}

// NewFileTemplate returns a template whose file create writes at path (in
// a directory of its own, removed once the bytes are read), on the first
// CopyTo.
func NewFileTemplate(create func(path string) error) *FileTemplate {
	return &FileTemplate{create: create}
}

// CopyTo writes the template's bytes to path, making them first when no
// test has yet. A failure to make or write them fails tb.
func (t *FileTemplate) CopyTo(tb testing.TB, path string) {
	tb.Helper()
	t.once.Do(func() {
		dir, err := os.MkdirTemp("", "testkit-template-")
		if err != nil {
			t.err = err
			return
		}
		defer os.RemoveAll(dir)
		p := filepath.Join(dir, filepath.Base(path))
		if t.err = t.create(p); t.err == nil {
			t.b, t.err = os.ReadFile(p)
		}
	})
	if t.err != nil {
		tb.Fatalf("make the template of %s: %v", filepath.Base(path), t.err)
	}
	if err := os.WriteFile(path, t.b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
