package e2e

// More of the approvals inbox in a real browser (docs/inbox.md): the
// keyboard alone and labels, sign-in by a sign-on proxy, times in the
// viewer's zone, an approval that stops counting, and the inbox's pages
// on each store.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestInboxTimesInViewersZone (docs/inbox.md "Times"): in a browser whose
// zone is Asia/Shanghai the task page shows each time in that zone with
// the UTC time beside it; with scripts off it shows the UTC time alone,
// as the server wrote it.
func TestInboxTimesInViewersZone(t *testing.T) {
	t.Parallel()
	d := withTask(t, "tz1", "A3001")
	shanghai := time.FixedZone("CST", 8*60*60) // no daylight saving time
	for _, tc := range []struct {
		name     string
		noScript bool
	}{{"local", false}, {"no-script", true}} {
		p := d.signedIn(t, "demo-user")
		p.emulate("Asia/Shanghai", tc.noScript)
		p.open("/tasks/tz1")
		raw := get(p, chromedp.Evaluate[string](`document.querySelector('dl.draft time').getAttribute('datetime')`))
		at, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			t.Fatalf("the expiry's datetime %q: %v", raw, err)
		}
		utc := at.UTC().Format("2006-01-02 15:04:05") + " UTC"
		got := p.text("dl.draft time")
		want := at.In(shanghai).Format("2006-01-02 15:04:05") + " Asia/Shanghai (" + at.UTC().Format("15:04:05") + " UTC)"
		if at.In(shanghai).Format("2006-01-02") != at.UTC().Format("2006-01-02") {
			want = at.In(shanghai).Format("2006-01-02 15:04:05") + " Asia/Shanghai (" + utc + ")"
		}
		if tc.noScript {
			want = utc
		}
		if got != want {
			t.Errorf("%s: the expiry reads %q, want %q", tc.name, got, want)
		}
		p.shot(tc.name)
	}
}

// TestInboxApprovalNoLongerCounts (docs/approvals.md "Two approvals"):
// alice approves a task that needs two, the owner revokes her grant, and
// bob's approval is taken but submits nothing: his page says so in plain
// words, that alice's approval no longer counts and why, and what the
// task waits for.
func TestInboxApprovalNoLongerCounts(t *testing.T) {
	t.Parallel()
	d := newDesk(t, []string{"alice", "bob"}, twoPeople(t, "nc1", "A3004", "2"))
	alice, bob := d.signedIn(t, "alice"), d.signedIn(t, "bob")
	alice.approveVersion1("nc1")
	d.mustCLI(t, "demo-user", "approvers", "revoke", "alice")
	bob.approveVersion1("nc1")
	out := bob.text("main [role=status]")
	for _, want := range []string{"Your approval of version 1 is recorded, but the approval of alice no longer counts", "alice no longer holds a grant from demo-user", "nothing was submitted", "1 of 2 approvals count now", "waits for another approval"} {
		if !strings.Contains(out, want) {
			t.Errorf("bob's outcome %q lacks %q", out, want)
		}
	}
	if n := bob.count("main p.outcome"); n != 0 {
		t.Errorf("an approval that submitted nothing is shown as a success (%d .outcome)", n)
	}
	if regexp.MustCompile(`\dT\d\d:\d\d`).MatchString(out) {
		t.Errorf("bob's outcome %q writes a time as RFC 3339, not as the page's times", out)
	}
	if tr := bob.text(".trail"); !strings.Contains(tr, "does not count") {
		t.Errorf("the trail %q; want alice's approval marked as not counting", tr)
	}
	d.settled(t, bob, "not-counted", "nc1", "waiting", "0")
}

// TestInboxPagesOnEachStore (docs/inbox.md "Inbox"): on a data dir and on
// PostgreSQL (--store, when ASSISTANT_TEST_PG names a server) the inbox
// of 55 waiting tasks shows 50, soonest expiry first, and a next page
// with the other 5; "My requests" lists the task still without a draft
// last; a task of the list approves and is submitted.
func TestInboxPagesOnEachStore(t *testing.T) {
	t.Parallel()
	for _, pl := range places(t) {
		t.Run(pl.name, func(t *testing.T) {
			d := newDeskOn(t, pl, []string{"demo-user"}, func(p place) {
				var orders, rows []string
				day := time.Now().UTC().AddDate(0, 0, -2).Format("2006-01-02")
				for i := range 55 {
					orders = append(orders, fmt.Sprintf("P%02d,demo-user,运动鞋 42码 no. %d,%s,false", i, i, day))
					rows = append(rows, fmt.Sprintf("pg%02d,P%02d,尺码偏小 %d", i, i, i))
				}
				p.mustCLI(t, "demo-user", "orders", "import", "--timezone", "UTC", writeShop(t, orders...))
				p.mustCLI(t, "demo-user", "batch", "pg", writeFile(t, "rows.csv", "task,order,reason\n"+strings.Join(rows, "\n")+"\n"))
				p.mustCLI(t, "demo-user", "start", "zz-noreason", "A3001")
			})
			p := d.signedIn(t, "demo-user")
			if n := p.count("table.inbox tbody tr"); n != 50 {
				t.Errorf("the first page lists %d tasks, want 50", n)
			}
			if first := p.text("table.inbox tbody tr"); !strings.Contains(first, "pg00") || !strings.Contains(first, "运动鞋 42码 no. 0") {
				t.Errorf("the first row %q; want pg00, the soonest to expire, with its item", first)
			}
			p.shot("first-page")
			p.navigate(chromedp.Click(chromedp.Search(`//a[@rel="next"]`)))
			var tasks []string
			for i := range p.count("table.inbox tbody tr") {
				tasks = append(tasks, p.text(fmt.Sprintf("table.inbox tbody tr:nth-child(%d) td", i+1)))
			}
			if got := strings.Join(tasks, " "); got != "pg50 pg51 pg52 pg53 pg54" {
				t.Errorf("the second page lists %q, want pg50 … pg54", got)
			}
			p.shot("second-page")
			p.navigate(chromedp.Click(chromedp.Search(`//a[.="My requests"]`)))
			if n := p.count("table.inbox tbody tr"); n != 50 {
				t.Errorf("my requests list %d tasks on the first page, want 50", n)
			}
			p.navigate(chromedp.Click(chromedp.Search(`//a[@rel="next"]`)))
			if last := p.text("table.inbox tbody tr:last-child"); !strings.Contains(last, "zz-noreason") || !strings.Contains(last, "no draft yet") {
				t.Errorf("the last of my requests %q; want the task without a draft", last)
			}
			p.approveVersion1("pg07")
			if out := p.text(".outcome"); !strings.Contains(out, "Submitted") {
				t.Errorf("approving pg07: %q, want submitted", out)
			}
			d.wantStatus(t, "pg07", "done", "1")
		})
	}
}

// unlabelledControls is a script that lists, as their outer HTML, the
// form controls of the page a person can reach that carry no accessible
// name: an input or textarea without a label, aria-label or
// aria-labelledby; a button or link without text.
const unlabelledControls = `Array.from(document.querySelectorAll('input:not([type=hidden]), textarea, select, button, a[href]'))
  .filter(e => {
    if (e.matches('button, a')) return e.textContent.trim() === '' && !e.getAttribute('aria-label');
    return e.labels.length === 0 && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby');
  })
  .map(e => e.outerHTML)`

// focusTo presses Tab until the focused element's text (or value) is
// want, at most 40 times, and fails t if it never is; each element
// focused on the way must show a visible focus outline.
func (p *person) focusTo(want string) {
	p.t.Helper()
	for range 40 {
		p.do(chromedp.KeyEvent(kb.Tab))
		got := get(p, chromedp.Evaluate[struct{ Text, Outline string }](`(() => { const e = document.activeElement;
		  return {Text: (e.innerText || e.value || '').trim(), Outline: getComputedStyle(e).outlineStyle}; })()`))
		if got.Text != "" && got.Outline == "none" {
			p.t.Errorf("focused by Tab, %q shows no focus outline", got.Text)
		}
		if got.Text == want {
			return
		}
	}
	p.t.Fatalf("40 presses of Tab never focused %q", want)
}

// TestInboxUsableByKeyboardAlone (docs/inbox.md "Accessibility"): a person
// signs in, opens a task and approves it with the keyboard alone (typing,
// Tab and Enter; every element Tab reaches shows its focus), and every
// control of the sign-in form, the inbox and the task page carries a
// label.
func TestInboxUsableByKeyboardAlone(t *testing.T) {
	t.Parallel()
	d := withTask(t, "kb1", "A3001")
	p := newPerson(t, d.s, 1024)
	labelled := func(page string) {
		t.Helper()
		for _, html := range get(p, chromedp.Evaluate[[]string](unlabelledControls)) {
			t.Errorf("%s: a control without a label: %s", page, html)
		}
	}
	p.open("/login")
	labelled("sign-in")
	p.do(chromedp.KeyEvent(d.tokens["demo-user"])) // the token field has the focus
	p.navigate(chromedp.KeyEvent(kb.Enter))
	if h := p.text("h1"); h != "Inbox" {
		t.Fatalf("after typing the token and Enter the page is %q, want the inbox", h)
	}
	labelled("inbox")
	p.focusTo("kb1")
	p.navigate(chromedp.KeyEvent(kb.Enter))
	if h := p.text("h1"); h != "Task kb1" {
		t.Fatalf("Enter on the task's link shows %q, want its page", h)
	}
	labelled("task")
	p.focusTo("Approve version 1")
	p.shot("approve-focused")
	p.navigate(chromedp.KeyEvent(kb.Enter))
	d.settled(t, p, "submitted", "kb1", "done", "1")
}

// TestInboxSignedInByTheProxy (docs/inbox.md "Sign-in and sessions"):
// behind a sign-on proxy (--trust-header X-Forwarded-User
// --trusted-proxy 127.0.0.1; the browser sends the header the proxy would
// add) the inbox opens without the sign-in form, as the header's person,
// offers no sign-out (the proxy keeps the sign-in), and an approval
// there submits once.
func TestInboxSignedInByTheProxy(t *testing.T) {
	t.Parallel()
	pl := browserPlace(t)
	pl.mustCLI(t, "demo-user", "start", "sso1", "A3001", "--reason", "too small")
	s := serve(t, pl, nil, "--trust-header", "X-Forwarded-User", "--trusted-proxy", "127.0.0.1")
	s.ready(t)
	d := &desk{place: pl, s: s}
	p := newPerson(t, s, 1024)
	p.sendHeader("X-Forwarded-User", "demo-user")
	p.open("/inbox")
	if h := p.text("h1"); h != "Inbox" || p.last != 200 {
		t.Fatalf("the inbox behind the proxy: %d %q, want 200 and the inbox", p.last, h)
	}
	if who := p.text(".who"); who != "Signed in as demo-user by the sign-on proxy" {
		t.Errorf("the header says %q", who)
	}
	if p.has("Sign out") {
		t.Error("a page signed in by the proxy offers to sign out")
	}
	p.shot("inbox")
	p.approveVersion1("sso1")
	d.settled(t, p, "submitted", "sso1", "done", "1")
}
