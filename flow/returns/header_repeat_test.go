package returns_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"assistant/business"
	"assistant/flow/returns"
)

// A header that names a column twice is refused, naming the column: which
// copy holds the value is unknown (the first
// silently won). Another name of the column (an alias) is no repeat: the
// spec's first name wins, as before.
func TestHeaderRepeatedColumn(t *testing.T) {
	parsers := map[string]func(string) error{
		"batch": func(s string) error { _, _, err := returns.ParseBatch(strings.NewReader(s)); return err },
		"decide": func(s string) error {
			_, _, err := returns.ParseDecisions(strings.NewReader(s))
			return err
		},
		"orders": func(s string) error {
			_, err := business.ParseOrders(context.Background(), strings.NewReader(s), business.ParseOptions{})
			return err
		},
	}
	for _, tc := range []struct {
		name, parser, file string
		column             string // "": the file is good
	}{
		{"DecideActionTwice", "decide", "task,action,action\nr1,cancel,approve\n", "action"},
		{"DecideTaskTwiceSpelledApart", "decide", "Task ID,action,task_id\nr1,approve,r2\n", "task"},
		{"DecideAliasBesideName", "decide", "task,decision,action\nr1,cancel,approve\n", ""},
		{"BatchOrderTwice", "batch", "task,order,reason,Order\nx1,A3002,size,A3003\n", "order"},
		{"BatchGood", "batch", "task,order,reason,notes,notes\nx1,A3002,size,a,b\n", ""},
		{"OrdersFinalSaleTwice", "orders", "order_id,user,item,final_sale,Final Sale\nQ1,demo-user,K,false,true\n", "final_sale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parsers[tc.parser](tc.file)
			if tc.column == "" {
				if err != nil {
					t.Fatalf("good header refused: %v", err)
				}
				return
			}
			var he *business.HeaderError
			if !errors.As(err, &he) || !strings.Contains(err.Error(), "column "+tc.column+" given 2 times") {
				t.Fatalf("error %v, want a *business.HeaderError naming column %s given twice", err, tc.column)
			}
		})
	}
}
