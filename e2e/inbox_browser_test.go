package e2e

// The approvals inbox in a real browser (docs/inbox.md): headless
// Chromium driven by chromedp against `assistant serve` in a process of
// its own, each person in a browser context of their own. Each test
// saves a full-page screenshot of the pages it checks
// ($ASSISTANT_SCREENSHOTS).

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// desk is a server for a browser test: a fresh data dir with the
// teaching orders (demo-user's), the server started on it with env, and
// access tokens of the people named.
type desk struct {
	place
	s      *server
	tokens map[string]string
}

// newDesk makes the data dir and a token for each of users, runs setup
// (commands on the data dir before the server starts), then starts the
// server with env and waits until it is ready.
func newDesk(t *testing.T, users []string, setup func(p place), env ...string) *desk {
	t.Helper()
	return newDeskOn(t, browserPlace(t), users, setup, env...)
}

// newDeskOn is newDesk on the stores of pl.
func newDeskOn(t *testing.T, pl place, users []string, setup func(p place), env ...string) *desk {
	t.Helper()
	d := &desk{place: pl, tokens: map[string]string{}}
	for _, u := range users {
		_, d.tokens[u] = d.token(t, u)
	}
	if setup != nil {
		setup(d.place)
	}
	d.s = serve(t, d.place, env)
	d.s.ready(t)
	return d
}

// withTask is a desk of demo-user's with task started on order (reason
// "too small"), the server started with env.
func withTask(t *testing.T, task, order string, env ...string) *desk {
	t.Helper()
	return newDesk(t, []string{"demo-user"}, func(p place) {
		p.mustCLI(t, "demo-user", "start", task, order, "--reason", "too small")
	}, env...)
}

// signedIn is a browser of user's, signed in, showing the inbox.
func (d *desk) signedIn(t *testing.T, user string) *person {
	t.Helper()
	p := newPerson(t, d.s, 1024)
	p.signIn(d.tokens[user])
	return p
}

// show is show's JSON of task on the data dir now.
func (d *desk) show(t *testing.T, task string) map[string]any {
	t.Helper()
	out, errOut, code := d.cli(t, nil, "show", task)
	return wantJSON(t, []string{"show", task}, out, errOut, code)
}

// wantStatus fails t unless show says task has status and the data
// dir holds apps applications of it.
func (d *desk) wantStatus(t *testing.T, task, status, apps string) {
	t.Helper()
	if got := d.show(t, task)["status"]; got != status {
		t.Errorf("show %s: status %v, want %s", task, got, status)
	}
	if got := d.apps(t, task); got != apps {
		t.Errorf("%s has %s applications, want %s", task, got, apps)
	}
}

// settled saves p's page as screenshot shot, then checks task as
// wantStatus does: the page a test ends on, and what the data dir holds
// after it.
func (d *desk) settled(t *testing.T, p *person, shot, task, status, apps string) {
	t.Helper()
	p.shot(shot)
	d.wantStatus(t, task, status, apps)
}

// twoPeople starts task on order as demo-user with approvals, after
// granting alice and bob the approval of demo-user's tasks.
func twoPeople(t *testing.T, task, order, approvals string) func(p place) {
	return func(p place) {
		for _, g := range []string{"alice", "bob"} {
			p.mustCLI(t, "demo-user", "approvers", "grant", g, "--for", "demo-user")
		}
		p.mustCLI(t, "demo-user", "start", task, order, "--reason", "too small", "--approvals", approvals)
	}
}

// approveVersion1 opens task's page and presses "Approve version 1".
func (p *person) approveVersion1(task string) {
	p.t.Helper()
	p.open("/tasks/" + task)
	p.press("Approve version 1")
}

// TestInboxSignIn (docs/inbox.md "Sign-in and sessions"): the inbox
// without a session redirects to the sign-in form; a token that does not
// sign in shows the form again with why (401); a live one makes a
// session cookie (HttpOnly, SameSite=Strict) and shows the inbox with the
// task waiting, its item and reason in any script as text; at 320 px the
// inbox is one column that does not scroll sideways.
func TestInboxSignIn(t *testing.T) {
	t.Parallel()
	d := newDesk(t, []string{"demo-user"}, func(p place) {
		p.mustCLI(t, "demo-user", "start", "w1", "A3003", "--reason", "尺码偏小 size too small")
	})
	p := newPerson(t, d.s, 1024)
	p.open("/inbox")
	if p.path() != "/login" {
		t.Fatalf("the inbox without a session is %s, want a redirect to /login", p.path())
	}
	p.do(chromedp.SendKeys(chromedp.ID("token"), "ast_not-a-token"))
	p.press("Sign in")
	if p.last != http.StatusUnauthorized || !strings.Contains(p.text(".problem"), "does not sign in") {
		t.Errorf("a bad token: %d %q; want 401 and why", p.last, p.text("main"))
	}
	p.shot("bad-token")
	p.signIn(d.tokens["demo-user"])
	c := p.session()
	if c == nil || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Secure {
		t.Errorf("the session cookie %+v; want HttpOnly, SameSite=Strict, not Secure over plain HTTP", c)
	}
	row := p.text("table.inbox tbody tr")
	for _, want := range []string{"w1", "A3003", "运动鞋 42码", "尺码偏小 size too small", "1", "0 of 1"} {
		if !strings.Contains(row, want) {
			t.Errorf("the inbox row %q lacks %q", row, want)
		}
	}
	p.shot("inbox")
	narrow := newPerson(t, d.s, 320)
	narrow.signIn(d.tokens["demo-user"])
	if w := get(narrow, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 320 {
		t.Errorf("at 320 px the inbox is %d px wide: it scrolls sideways", w)
	}
	narrow.shot("inbox-320px")
}

// TestInboxApprove (docs/inbox.md "The task page"): the task page shows
// the draft as it will be submitted and its effect; approving it
// redirects back to the page, which says it was submitted with its
// application id and offers nothing more; the data dir holds one
// application.
func TestInboxApprove(t *testing.T) {
	t.Parallel()
	d := withTask(t, "ap1", "A3001")
	p := d.signedIn(t, "demo-user")
	p.navigate(chromedp.Click(chromedp.Search(`//a[.="ap1"]`)))
	draft := p.text("dl.draft")
	for _, want := range []string{"A3001", "Trail running shoes (size 42)", "too small", "demo-user", "0 of 1"} {
		if !strings.Contains(draft, want) {
			t.Errorf("the draft %q lacks %q", draft, want)
		}
	}
	if e := p.text(".effect"); !strings.Contains(e, "awaits review") || !strings.Contains(e, "no refund") {
		t.Errorf("the effect %q; want the application that awaits review and no refund", e)
	}
	p.shot("before")
	p.press("Approve version 1")
	if p.path() != "/tasks/ap1?answered=approve" {
		t.Errorf("after approving the browser is at %s, want the task page (Post/Redirect/Get)", p.path())
	}
	out := p.text(".outcome")
	if !strings.Contains(out, "Submitted") || !strings.Contains(out, "awaits review") {
		t.Errorf("the outcome %q; want submitted with its application", out)
	}
	if n := p.count("main form"); n != 0 {
		t.Errorf("a submitted task offers %d forms, want none", n)
	}
	d.settled(t, p, "submitted", "ap1", "done", "1")
	app := d.show(t, "ap1")["result"].(map[string]any)["application_id"].(string)
	if !strings.Contains(out, app) {
		t.Errorf("the outcome %q does not name the application %s", out, app)
	}
}

// TestInboxEditThenApproveVersion2: an edit makes version 2, which the
// page then shows and offers to approve, with what changed from version
// 1 (old → new) and the run's timeline, one column at 320 px;
// approving it submits version 2 and the trail shows both answers.
func TestInboxEditThenApproveVersion2(t *testing.T) {
	t.Parallel()
	d := withTask(t, "ed1", "A3002")
	p := d.signedIn(t, "demo-user")
	p.open("/tasks/ed1")
	p.do(chromedp.SetValue(chromedp.ID("edit-reason"), "wrong colour"))
	p.press("Edit the reason")
	if out := p.text(".outcome"); !strings.Contains(out, "Version 2") {
		t.Errorf("after the edit the outcome is %q, want version 2", out)
	}
	if r := p.text("dd.reason"); r != "wrong colour" {
		t.Errorf("the draft's reason is %q, want the edited one", r)
	}
	if h, ch := p.text("#changes-title"), p.text("dl.changes"); h != "What changed from version 1" || !strings.Contains(ch, "too small") || !strings.Contains(ch, "wrong colour") || !strings.Contains(ch, "Expires") {
		t.Errorf("what changed: %q %q; want version 1's reason and expiry beside version 2's", h, ch)
	}
	tl := p.text(".timeline")
	for _, want := range []string{"Look up the order · finished", "Prepare the draft · finished", "Ask for approval · asked", "Ask for approval · answered", "Ask for approval · waiting for an answer"} {
		if !strings.Contains(tl, want) {
			t.Errorf("the timeline reads %q; want %q", tl, want)
		}
	}
	if strings.Contains(tl, "attempt") {
		t.Errorf("the timeline %q counts a question asked again as a retry", tl)
	}
	narrow := newPerson(t, d.s, 320)
	narrow.signIn(d.tokens["demo-user"])
	narrow.open("/tasks/ed1")
	if w := get(narrow, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 320 {
		t.Errorf("at 320 px the task page is %d px wide: it scrolls sideways", w)
	}
	narrow.shot("version-2-320px")
	p.shot("version-2")
	p.press("Approve version 2")
	if out := p.text(".outcome"); !strings.Contains(out, "Submitted") {
		t.Errorf("approving version 2: %q, want submitted", out)
	}
	trail := p.text(".trail")
	if !strings.Contains(trail, "edit version 1") || !strings.Contains(trail, "approve version 2") {
		t.Errorf("the trail %q; want the edit of version 1 and the approval of version 2", trail)
	}
	d.settled(t, p, "submitted", "ed1", "done", "1")
}

// TestInboxTwoApprovers (docs/approvals.md "Two approvals"): on a task
// that needs two, alice's approval leaves it waiting for the second
// approver, and bob's, in another browser, submits it.
func TestInboxTwoApprovers(t *testing.T) {
	t.Parallel()
	d := newDesk(t, []string{"alice", "bob"}, twoPeople(t, "tp1", "A3004", "2"))
	alice, bob := d.signedIn(t, "alice"), d.signedIn(t, "bob")
	if row := bob.text("table.inbox tbody tr"); !strings.Contains(row, "tp1") || !strings.Contains(row, "0 of 2") {
		t.Errorf("bob's inbox row %q; want tp1 with 0 of 2", row)
	}
	alice.approveVersion1("tp1")
	if out := alice.text(".outcome"); !strings.Contains(out, "waiting for the second approver") || !strings.Contains(out, "1 of 2") {
		t.Errorf("alice's outcome %q; want 1 of 2, waiting for the second approver", out)
	}
	if alice.has("Approve version 1") {
		t.Error("alice is offered a second approval of the version she approved")
	}
	d.settled(t, alice, "first-approval", "tp1", "waiting", "0")
	bob.open("/inbox")
	if row := bob.text("table.inbox tbody tr"); !strings.Contains(row, "1 of 2") {
		t.Errorf("bob's inbox row %q; want 1 of 2", row)
	}
	bob.approveVersion1("tp1")
	if out := bob.text(".outcome"); !strings.Contains(out, "Submitted") {
		t.Errorf("bob's outcome %q; want submitted", out)
	}
	d.settled(t, bob, "second-approval", "tp1", "done", "1")
}

// TestInboxAnotherApproverFaster: two people load the page of a task
// that needs one approval; the first approves, and the second's approve
// is a page that says someone was faster and shows the task submitted.
func TestInboxAnotherApproverFaster(t *testing.T) {
	t.Parallel()
	d := newDesk(t, []string{"alice", "bob"}, twoPeople(t, "fa1", "A3001", "1"))
	alice, bob := d.signedIn(t, "alice"), d.signedIn(t, "bob")
	alice.open("/tasks/fa1")
	bob.open("/tasks/fa1")
	alice.press("Approve version 1")
	bob.press("Approve version 1")
	if bob.last != http.StatusConflict || !strings.Contains(bob.text("#problem-title"), "Someone was faster") {
		t.Errorf("the slower approver: %d %q; want 409 and someone was faster", bob.last, bob.text("main"))
	}
	if msg := bob.text(".problem p"); !strings.Contains(msg, "alice answered approve at") || !strings.Contains(msg, "before your approval arrived: yours changed nothing") {
		t.Errorf("the slower approver is told %q; want who was faster, when, and that theirs changed nothing", msg)
	}
	if !strings.Contains(bob.text(".status"), "done") || bob.count("main form") != 0 {
		t.Errorf("the slower approver's page %q; want the task done and nothing to press", bob.text("main"))
	}
	d.settled(t, bob, "faster", "fa1", "done", "1")
}

// TestInboxRequesterRefusedAsSecondApprover (docs/approvals.md "Two
// approvals"): the requester of a task that needs two approvals is not
// offered approve, and says why; an approval posted all the same is a
// page that says it was refused, and nothing changed.
func TestInboxRequesterRefusedAsSecondApprover(t *testing.T) {
	t.Parallel()
	d := newDesk(t, []string{"demo-user", "alice"}, twoPeople(t, "rq1", "A3004", "2"))
	alice := d.signedIn(t, "alice")
	alice.approveVersion1("rq1")
	p := d.signedIn(t, "demo-user")
	p.open("/tasks/rq1")
	if p.has("Approve version 1") || !strings.Contains(p.text(".actions .notice"), "You requested this task") {
		t.Errorf("the requester's page %q; want no approve and why", p.text("main"))
	}
	p.shot("no-approve")
	// The form a stale or hand-made page would post.
	draft := get(p, chromedp.Evaluate[string](`document.querySelector('input[name=draft]').value`))
	p.navigate(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/tasks/rq1/answers';
		for (const [k, v] of [['task', 'rq1'], ['draft', %s], ['version', '1'], ['action', 'approve']]) { const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
		document.body.appendChild(f); f.submit(); })()`, jsString(draft))))
	if p.last != http.StatusBadRequest || !strings.Contains(p.text(".problem"), "You requested this task") || !strings.Contains(p.text(".problem"), "waits for one more approval from someone else") {
		t.Errorf("the requester's approval: %d %q; want 400 and why", p.last, p.text("main"))
	}
	d.settled(t, p, "refused", "rq1", "waiting", "0")
}

// TestInboxStaleVersionInSecondTab: a page loaded at version 1 in one
// tab, an edit to version 2 in another; approving from the first is a
// page that says the draft changed and shows version 2, and nothing was
// submitted.
func TestInboxStaleVersionInSecondTab(t *testing.T) {
	t.Parallel()
	d := withTask(t, "st1", "A3002")
	first := d.signedIn(t, "demo-user")
	first.open("/tasks/st1")
	second := first.tab()
	second.open("/tasks/st1")
	second.do(chromedp.SetValue(chromedp.ID("edit-reason"), "too large"))
	second.press("Edit the reason")
	first.press("Approve version 1")
	title, msg := first.text("#problem-title"), first.text(".problem p")
	if first.last != http.StatusConflict || title != "This draft was changed to version 2 after you opened it; review version 2 below" {
		t.Errorf("the stale approval: %d %q; want 409 and the draft changed to version 2", first.last, title)
	}
	for _, want := range []string{"You opened version 1, and demo-user made version 2 at", "with the reason “too large”", "Nothing was approved"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the stale approval says %q; want %q", msg, want)
		}
	}
	if strings.Contains(msg, "d_") {
		t.Errorf("the stale approval quotes draft ids: %q", msg)
	}
	if ch := first.text("dl.changes"); !strings.Contains(ch, "too small") || !strings.Contains(ch, "too large") {
		t.Errorf("what changed from version 1 reads %q; want too small → too large", ch)
	}
	if !first.has("Approve version 2") || first.text("dd.reason") != "too large" {
		t.Errorf("the stale tab's page %q; want version 2 shown and offered", first.text("main"))
	}
	d.settled(t, first, "stale", "st1", "waiting", "0")
}

// TestInboxCancel: cancelling ends the task without an application; the
// page says so and offers nothing more.
func TestInboxCancel(t *testing.T) {
	t.Parallel()
	d := withTask(t, "cn1", "A3001")
	p := d.signedIn(t, "demo-user")
	p.open("/tasks/cn1")
	p.press("Cancel the request")
	if out := p.text(".outcome"); !strings.Contains(out, "Cancelled") {
		t.Errorf("the outcome %q; want cancelled", out)
	}
	if n := p.count("main form"); n != 0 {
		t.Errorf("a cancelled task offers %d forms, want none", n)
	}
	d.settled(t, p, "cancelled", "cn1", "cancelled", "0")
}

// TestInboxExpiredDraft: a task whose draft expired (the server's clock
// is 11 minutes ahead; its start-up scan ended the task) is not in the
// inbox, and its page says why and offers nothing.
func TestInboxExpiredDraft(t *testing.T) {
	t.Parallel()
	d := withTask(t, "ex1", "A3001", "ASSISTANT_CLOCK=+11m")
	p := d.signedIn(t, "demo-user")
	if p.count("table.inbox") != 0 || !strings.Contains(p.text(".empty"), "Nothing waits") {
		t.Errorf("the inbox %q; want nothing waiting", p.text("main"))
	}
	p.open("/tasks/ex1")
	if c := p.text(".closed"); !strings.Contains(c, "expired") {
		t.Errorf("the expired task says %q; want why (expired)", c)
	}
	if n := p.count("main form"); n != 0 {
		t.Errorf("an expired task offers %d forms, want none", n)
	}
	p.shot("expired")
}

// TestInboxScriptReasonIsText: a reason holding <script> is shown as the
// text it is, on the inbox and the task page; no script runs.
func TestInboxScriptReasonIsText(t *testing.T) {
	t.Parallel()
	reason := `<script>document.title="owned"</script> 运动鞋 <b>42码</b>`
	d := newDesk(t, []string{"demo-user"}, func(p place) {
		p.mustCLI(t, "demo-user", "start", "xs1", "A3003", "--reason", reason)
	})
	p := d.signedIn(t, "demo-user")
	if row := p.text("table.inbox tbody tr"); !strings.Contains(row, reason) {
		t.Errorf("the inbox row %q; want the reason as text", row)
	}
	p.open("/tasks/xs1")
	if got := p.text("dd.reason"); got != reason {
		t.Errorf("the reason reads %q, want %q", got, reason)
	}
	if n := p.count("main script, main b"); n != 0 {
		t.Errorf("the page holds %d elements made from the reason", n)
	}
	if title := get(p, chromedp.Title()); title == "owned" {
		t.Error("the reason's script ran")
	}
	p.shot("script-as-text")
}

// TestInboxCrossOriginPostRefused (docs/inbox.md "Sign-in and
// sessions"): a form on another origin that posts an answer to the
// server is refused 403 (http.CrossOriginProtection) and changes
// nothing.
func TestInboxCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	d := withTask(t, "co1", "A3001")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>elsewhere</title><h1>Win a prize</h1>
<form method="post" action="`+d.s.url+`/tasks/co1/answers"><input type="hidden" name="task" value="co1"><input type="hidden" name="action" value="cancel"><button type="submit">Claim</button></form>`)
	}))
	t.Cleanup(evil.Close)
	p := d.signedIn(t, "demo-user")
	// Another port of the same host is another origin.
	p.navigate(chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)))
	p.press("Claim")
	if p.last != http.StatusForbidden || !strings.Contains(p.text("main"), "sent from another site") {
		t.Errorf("the cross-origin post: %d %q; want 403 and why", p.last, p.text("main"))
	}
	d.settled(t, p, "refused", "co1", "waiting", "0")
}

// TestInboxSignOut: signing out ends the session on the server: the
// browser is sent to the sign-in form, the inbox redirects there again,
// and the old cookie, sent by another client, no longer signs in.
func TestInboxSignOut(t *testing.T) {
	t.Parallel()
	d := newDesk(t, []string{"demo-user"}, nil)
	p := d.signedIn(t, "demo-user")
	old := p.session()
	if old == nil {
		t.Fatal("no session cookie after signing in")
	}
	p.press("Sign out")
	if p.path() != "/login?signed_out=1" || !strings.Contains(p.text("main"), "You signed out") {
		t.Errorf("after signing out: %s %q; want the sign-in form saying so", p.path(), p.text("main"))
	}
	p.shot("signed-out")
	p.open("/inbox")
	if p.path() != "/login" {
		t.Errorf("the inbox after signing out is %s, want /login", p.path())
	}
	req, err := http.NewRequest("GET", d.s.url+"/inbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: old.Name, Value: old.Value})
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("the old session cookie: %d to %q; want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
}
