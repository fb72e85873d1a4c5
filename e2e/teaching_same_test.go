package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportUsedTeachingOrderAsStoredIsUnchanged: a file that says of a
// teaching order a task uses exactly what is stored changes nothing and
// is reported unchanged (exit 0); only a row that would change it is
// refused. Before, every row of a used teaching order was refused, so
// importing the teaching file itself with --operator exited 3.
func TestImportUsedTeachingOrderAsStoredIsUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "t", "A3001", "--reason", "size") // makes the data dir
	out, stderr, code := run(t, dir, "orders", "list")
	if code != 0 {
		t.Fatalf("orders list: exit %d, %s", code, stderr)
	}
	var list struct {
		Orders []struct {
			OrderID     string `json:"order_id"`
			User        string
			Item        string
			DeliveredAt string `json:"delivered_at"`
			FinalSale   bool   `json:"final_sale"`
			Teaching    bool
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, o := range list.Orders {
		if o.OrderID == "A3009" && o.Teaching { // the seed's open application uses it
			row = fmt.Sprintf("%s,%s,%s,%s,%v", o.OrderID, o.User, o.Item, o.DeliveredAt, o.FinalSale)
		}
	}
	if row == "" {
		t.Fatalf("no teaching order A3009 in %s", out)
	}
	res := mustRun(t, dir, "orders", "import", writeShop(t, row))
	if res["unchanged"] != float64(1) || res["refused"] != float64(0) {
		t.Errorf("import of A3009 as stored: %v; want 1 unchanged, none refused", res)
	}
	changed := strings.Replace(row, "Bluetooth speaker", "Real speaker", 1)
	if _, stderr, code := run(t, dir, "orders", "import", writeShop(t, changed)); code != 3 || !strings.Contains(stderr, "teaching order that a task uses") {
		t.Errorf("import of A3009 changed: exit %d, %s; want exit 3, a teaching order that a task uses", code, stderr)
	}
}
