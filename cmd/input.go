package cmd

import (
	"context"
	"io"
	"os"
)

// interruptible returns a reader of r that ctx's end (a signal) ends at
// once, even while a read of r is blocked: a pipe, FIFO or terminal whose
// writer stalls would otherwise hold the command past SIGINT and SIGTERM
// until it sends more, which it may never do. Such an r (an *os.File that
// is not a regular file) is read in a goroutine of its own through a pipe
// (io.Pipe: no copy kept, one hand-over per read); once ctx ends, a read
// returns ctx's error (context.Canceled: exit 130 or 143), and the
// goroutine, still blocked on r, ends with the process. Regular files and
// readers that are not files never block: r itself. Closing r is still
// the caller's.
func interruptible(ctx context.Context, r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok {
		return r
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		return r
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, f)
		pw.CloseWithError(err) // nil: io.EOF for the reader
	}()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	return pr
}

// openInput opens the input file a person named (what names it in
// messages: "orders file", "batch file", "decide file"). A regular file
// is opened at once. Anything else (a FIFO, a terminal, /dev/stdin) is
// opened in a goroutine of its own, since open(2) of a FIFO blocks until
// a writer opens it, which may never happen: ctx's end (a signal) returns
// ctx's error at once (exit 130 or 143) and abandons the open, whose file
// is closed if it ever opens. Errors: a path that cannot be opened, or a
// directory, is ErrInvalid (exit 2) in one line; ctx's error.
func openInput(ctx context.Context, what, path string) (*os.File, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, usageErr("%s: %v", what, err)
	case st.IsDir():
		return nil, usageErr("%s: %s is a directory, not a file", what, termSafe(path))
	case st.Mode().IsRegular():
		f, err := os.Open(path)
		if err != nil {
			return nil, usageErr("%s: %v", what, err)
		}
		return f, nil
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, usageErr("%s: %v", what, o.err)
		}
		return o.f, nil
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
