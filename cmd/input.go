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
