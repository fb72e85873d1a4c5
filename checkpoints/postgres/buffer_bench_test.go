package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"assistant/internal/pgtest"
)

// BenchmarkRows writes chunks of 100 batch rows (each 3 checkpoints and 1
// pending write, of the sizes a return task writes up to its first
// question: bufferRow) to a local server, one op per chunk: through the
// plain store (4 commits a row) and through a write buffer (Preload of
// the chunk's threads, one Flush of 4 round trips). It reports rows/s and
// the CPU time per 1,000 rows of this process and of the server's
// sessions on the benchmark's database, which a machine busy with other
// work changes less than the wall time. The server of pgtest runs with
// fsync off: a commit costs its round trip and WAL write, not a disk
// flush.
func BenchmarkRows(b *testing.B) {
	const rows = 100
	ctx := context.Background()
	for _, mode := range []string{"Store", "Buffer"} {
		b.Run(mode, func(b *testing.B) {
			url := pgtest.Database(b)
			s := mustOpen(b, url)
			watcher := pgtest.Connect(b, url)
			chunk := 0
			run := func() {
				ids := make([]string, rows)
				for i := range ids {
					ids[i] = fmt.Sprintf("c%d-r%d", chunk, i)
				}
				chunk++
				if mode == "Store" {
					for _, id := range ids {
						bufferRow(b, s, id, "")
					}
					return
				}
				buf := s.NewBuffer()
				if err := buf.Preload(ctx, ids); err != nil {
					b.Fatal(err)
				}
				for _, id := range ids {
					bufferRow(b, buf, id, "")
				}
				if err := buf.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			run() // the pool's sessions open, the statements are prepared
			server, client := serverCPU(b, watcher), processCPU(b)
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			b.StopTimer()
			perK := float64(b.N*rows) / 1000
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64((processCPU(b)-client).Milliseconds())/perK, "client-cpu-ms/1k-rows")
			b.ReportMetric(float64((serverCPU(b, watcher)-server).Milliseconds())/perK, "server-cpu-ms/1k-rows")
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the user and system CPU time the server's sessions on the
// database of conn (but conn's own) have used, read from /proc: the
// server runs on this machine. A session that ended is not counted.
func serverCPU(tb testing.TB, conn *pgx.Conn) time.Duration {
	tb.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		tb.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		tb.Fatal(err)
	}
	const tick = 10 * time.Millisecond // USER_HZ, 100 on Linux
	var total time.Duration
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			tb.Skipf("the server's sessions are not readable in /proc (%v): not a local server", err)
		}
		// Fields after the command's closing parenthesis; utime and stime
		// are the 14th and 15th of the line.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, f := range fields[11:13] {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			total += time.Duration(n) * tick
		}
	}
	return total
}
