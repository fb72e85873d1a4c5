package e2e

// The first import (docs/orders.md "The first import"): an import into a
// data dir that does not exist makes it aside, checks the file while its
// orders are written, and names the data dir once they are committed.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asideDirs returns the temporary data dirs of first imports left in
// parent.
func asideDirs(t *testing.T, parent string) []string {
	t.Helper()
	var aside []string
	for _, n := range dirNames(t, parent) {
		if strings.HasPrefix(n, ".data.import-") {
			aside = append(aside, n)
		}
	}
	return aside
}

// bigShop returns n good rows of demo-user's orders F000000… .
func bigShop(n int) []string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf("F%06d,demo-user,Item %d,,false", i, i)
	}
	return rows
}

// TestFirstImportRefusedLateLeavesNothing: a file whose fault the check
// finds after the writer has written thousands of its orders (a bad last
// row, an order that comes back after others, another user's row without
// --operator) is refused as into a data dir that exists, the same exit
// code and message, and leaves no data dir and no temporary directory.
func TestFirstImportRefusedLateLeavesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		last []string
		code int
		want string
	}{
		{"BadLastRow", []string{"F999999,demo-user,Item,yesterday,false"}, 2, "line 20002"},
		{"OrderComesBack", []string{"F000007,demo-user,Item 7,,false"}, 2, "is also on line 9"},
		{"AnotherUsersRow", []string{"G1,other-user,Item,,false"}, 2, "line 20002"},
		{"RowsDisagree", []string{"G2,demo-user,Item,,false", "G2,demo-user,Item,,true"}, 2, "line 20003"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := writeShop(t, append(bigShop(20_000), tt.last...)...)
			parent := t.TempDir()
			_, errNew, code := run(t, filepath.Join(parent, "data"), "orders", "import", file)
			if code != tt.code || !strings.Contains(errNew, tt.want) {
				t.Fatalf("first import: exit %d, stderr %q; want %d naming %q", code, errNew, tt.code, tt.want)
			}
			if names := dirNames(t, parent); len(names) != 0 {
				t.Fatalf("left in the data dir's parent: %v, want nothing", names)
			}
			existing := filepath.Join(t.TempDir(), "data")
			makeDataDir(t, existing)
			_, errOld, codeOld := run(t, existing, "orders", "import", file)
			if codeOld != code || errOld != errNew {
				t.Errorf("into a data dir that exists: exit %d, stderr %q; the first import: exit %d, stderr %q; want the same", codeOld, errOld, code, errNew)
			}
		})
	}
}

// TestFirstImportReportsAsAnyImport: the first import's report and the
// orders it stores are those of the same file imported into a data dir
// that exists (checked before anything is written), for each kind of
// change: added orders, teaching orders replaced, a line-item export's
// merged rows, the shop's orders of several users (--operator).
func TestFirstImportReportsAsAnyImport(t *testing.T) {
	t.Parallel()
	day := time.Now().UTC().AddDate(0, 0, -3).Format(time.RFC3339)
	tests := []struct {
		name string
		args []string
		rows []string
	}{
		{"Own", nil, append([]string{"A3001,demo-user,Mug," + day + ",false"}, bigShop(1200)...)},
		{"LineItems", nil, []string{"L1,demo-user,Cup,,false", "L1,demo-user,Saucer,,false", "L2,demo-user,Pot," + day + ",true"}},
		{"Operator", []string{"--operator"}, []string{"A3002,other-user,Lamp,,false", "B4001,other-user,Desk," + day + ",false", "Z1,third-user,Chair,,false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := writeShop(t, tt.rows...)
			fresh := filepath.Join(t.TempDir(), "data")
			existing := filepath.Join(t.TempDir(), "data")
			makeDataDir(t, existing)
			args := append([]string{"orders", "import"}, append(tt.args, file)...)
			got := mustRun(t, fresh, args...)
			want := mustRun(t, existing, args...)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(want, "", "  ")
				t.Fatalf("first import's report:\n%s\nwant (into a data dir that exists):\n%s", g, w)
			}
			// A teaching order's delivery counts back from the moment
			// its data dir was made.
			q := `SELECT group_concat(user || '|' || order_id || '|' || item || '|' || CASE teaching WHEN 1 THEN 'days ago' ELSE coalesce(delivered_at, '-') END || '|' || final_sale || teaching || shop, ';')
				FROM (SELECT * FROM orders WHERE order_id != 'INIT0' ORDER BY user, order_id)`
			if g, w := query(t, fresh, "business.sqlite", q), query(t, existing, "business.sqlite", q); g != w {
				t.Fatalf("first import stored\n%.400s\nwant\n%.400s", g, w)
			}
			wantCleanFile(t, filepath.Join(fresh, "business.sqlite"))
			verifyClean(t, fresh)
		})
	}
}

// wantCleanFile fails t unless the SQLite file at path is left as a clean
// close leaves it: WAL mode in its header, an empty -wal whose
// modification time is not before the file's last change (ctime), so the
// next open reads no page to check it (internal/sqlite's leftState).
func wantCleanFile(t *testing.T, path string) {
	t.Helper()
	hdr := make([]byte, 100)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ReadAt(hdr, 0)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if hdr[18] != 2 || hdr[19] != 2 {
		t.Errorf("%s: header's read/write versions %d/%d, want 2/2 (WAL)", path, hdr[18], hdr[19])
	}
	if v := binary.BigEndian.Uint32(hdr[60:64]); v == 0 {
		t.Errorf("%s: user_version 0, want the schema's", path)
	}
	db, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatalf("%s-wal: %v, want an empty one", path, err)
	}
	st := db.Sys().(*syscall.Stat_t)
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	if wal.Size() != 0 || ctime.After(wal.ModTime()) {
		t.Errorf("%s-wal: %d bytes, modified %v, the file changed %v; want empty and not older", path, wal.Size(), wal.ModTime(), ctime)
	}
}

// TestFirstImportKilledLeavesOnlyAside: a first import killed (SIGKILL)
// once its data dir aside holds its two files leaves no data dir, only
// the temporary directory, named for it; the import run again makes the
// data dir, and the task walkthrough works on it.
func TestFirstImportKilledLeavesOnlyAside(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	file := writeShop(t, bigShop(3000)...)
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "orders", "import", file)
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=import:before-write@pause")
	p := startPaused(t, c, "import:before-write")
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	exitWithin(t, p.done, 30*time.Second)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data dir after the kill: %v, want none", err)
	}
	if aside := asideDirs(t, parent); len(aside) != 1 {
		t.Fatalf("temporary data dirs %v, want the killed import's one", aside)
	}
	rep := mustRun(t, dir, "orders", "import", file)
	if rep["added"] != float64(3000) {
		t.Fatalf("import run again: %v, want 3000 added", rep)
	}
	mustRun(t, dir, "start", "r1", "A3001", "--reason", "too small")
	if v := mustRun(t, dir, "resume", "r1", "--action", "approve"); v["status"] != "done" {
		t.Fatalf("approve: %v, want done", v)
	}
	verifyClean(t, dir)
}

// TestFirstImportDataDirTakenMeanwhile: when another process makes the
// data dir while a first import writes aside (held at
// import:before-write), the first import imports its checked orders into
// the data dir that is there, exit 0, and removes its temporary one; the
// other process's orders stay.
func TestFirstImportDataDirTakenMeanwhile(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	file := writeShop(t, bigShop(2000)...)
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "orders", "import", file)
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=import:before-write@pause")
	var out strings.Builder
	c.Stdout = &out
	p := startPaused(t, c, "import:before-write")
	mustRun(t, dir, "orders", "import", writeShop(t, "OTHER1,demo-user,Vase,,false"))
	if err := p.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// It reaches import:before-write again before it writes into the
	// data dir that is there.
	eventually(t, "the first import stops before it writes again", func() bool { return stopped(p.Process.Pid) })
	if code := p.goOn(t); code != 0 {
		t.Fatalf("first import: exit %d, stderr %q; want 0 into the data dir that is there", code, p.stderr.String())
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep["added"] != float64(2000) {
		t.Fatalf("first import's report %q (%v), want 2000 added", out.String(), err)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id LIKE 'F%' OR order_id = 'OTHER1'`); got != "2001" {
		t.Errorf("%s orders stored, want both imports' 2001", got)
	}
	if aside := asideDirs(t, parent); len(aside) != 0 {
		t.Errorf("temporary data dirs left: %v", aside)
	}
	verifyClean(t, dir)
}

// TestFirstImportAsideImpossible: when the data dir cannot be made aside
// (a name too long for its temporary one, a parent that cannot be made),
// the import runs as into any data dir: a bad file is refused for itself,
// exit 2 with its message, before anything is made (never exit 1 for
// the temporary data dir), and a good one is imported where the data dir
// can be made.
func TestFirstImportAsideImpossible(t *testing.T) {
	t.Parallel()
	bad := writeShop(t, "K1,demo-user,Pen,yesterday,false")
	good := writeShop(t, "K2,demo-user,Pen,,false")
	long := strings.Repeat("d", 245) // its temporary name is over 255 bytes
	tests := []struct {
		name string
		dir  func(t *testing.T) string
		file string
		code int
		want string
	}{
		{"LongNameBadFile", func(t *testing.T) string { return filepath.Join(t.TempDir(), long) }, bad, 2, "line 2: delivered_at"},
		{"LongNameGoodFile", func(t *testing.T) string { return filepath.Join(t.TempDir(), long) }, good, 0, ""},
		{"DotDotGoodFile", func(t *testing.T) string {
			// "nope/../data": the kernel goes through nope, which the
			// import makes; made aside, the data dir landed beside nope
			// and the same --data then found nothing.
			return filepath.Join(t.TempDir(), "nope") + "/../data"
		}, good, 0, ""},
		{"DanglingParentBadFile", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "gone")
			if err := os.Symlink("nowhere", p); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(p, "data")
		}, bad, 2, "line 2: delivered_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := tt.dir(t)
			_, errOut, code := run(t, dir, "orders", "import", tt.file)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d naming %q", code, errOut, tt.code, tt.want)
			}
			if tt.code != 0 {
				if _, err := os.Lstat(dir); !os.IsNotExist(err) {
					t.Errorf("data dir after a refused file: %v, want none", err)
				}
				if _, err := os.Stat(filepath.Dir(dir)); err == nil {
					if aside := asideDirs(t, filepath.Dir(dir)); len(aside) != 0 {
						t.Errorf("temporary data dirs left: %v", aside)
					}
				}
				return
			}
			if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id = 'K2'`); got != "1" {
				t.Errorf("K2 stored %s times, want once", got)
			}
			if _, errOut, code := run(t, dir, "orders", "list"); code != 0 {
				t.Errorf("orders list with the same --data: exit %d, stderr %q", code, errOut)
			}
		})
	}
}
