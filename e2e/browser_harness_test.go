package e2e

// Helpers of the browser tests (inbox_browser_test.go): one headless
// Chromium per test binary, a browser context of its own (its own
// cookies) per signed-in person, and a full-page screenshot of each page
// a test checks.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumPaths are where Debian's chromium package (and others) put the
// browser; the first that exists is used.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}

// browserTimeout bounds what one step of a browser test may take (a
// page load, a click and the page it leads to): a browser that hangs
// fails the test instead of the whole binary.
const browserTimeout = 60 * time.Second

var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
)

// chromiumPath is the browser to drive, "" when none is installed.
func chromiumPath() string {
	for _, p := range chromiumPaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// browser is the test binary's one headless Chromium, started on first
// use with a fresh profile under the binary's temporary directory. It
// skips t when no Chromium is installed, except in CI (CI=true), where
// that fails t.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium found (looked for " + strings.Join(chromiumPaths, ", ") + "): CI must have one; .ci/run installs Debian's chromium")
		}
		t.Skip("no Chromium found (looked for " + strings.Join(chromiumPaths, ", ") + "): the browser tests need one (apt-get install chromium)")
	}
	browserOnce.Do(func() {
		profile := filepath.Join(binDir, "chromium-profile")
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.UserDataDir(profile),
			chromedp.Headless,
			chromedp.NoFirstRun,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("password-store", "basic"),
		}
		// The browser lives as long as the test binary: its context is
		// never cancelled, and the kernel kills it when the binary exits
		// (chromedp starts it with Pdeathsig on Linux).
		alloc, _ := chromedp.NewExecAllocator(context.Background(), opts...)
		browserCtx, _ = chromedp.NewContext(alloc)
		browserErr = chromedp.Do(browserCtx)
	})
	if browserErr != nil {
		t.Fatalf("start Chromium (%s): %v", path, browserErr)
	}
	return browserCtx
}

// person is one signed-in browser: a browser context of its own (its
// own cookie jar), with a tab, against server s.
type person struct {
	t   *testing.T
	ctx context.Context
	s   *server
	// last is the HTTP status of the page p shows (of the last
	// navigation, after redirects).
	last int
}

// newPerson opens a browser context of its own with one tab, width CSS
// pixels wide, against s; it is closed when t ends.
func newPerson(t *testing.T, s *server, width int64) *person {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first run on a context makes its tab, which lives as long as
	// the context of that run: ctx itself, without a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	p := &person{t: t, ctx: ctx, s: s}
	p.do(chromedp.EmulateViewport(width, 800))
	return p
}

// tab opens another tab in p's browser context (the same cookies).
func (p *person) tab() *person {
	p.t.Helper()
	ctx, cancel := chromedp.NewContext(p.ctx)
	p.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		p.t.Fatalf("open a tab: %v", err)
	}
	q := &person{t: p.t, ctx: ctx, s: p.s}
	q.do(chromedp.EmulateViewport(1024, 800))
	return q
}

// do runs steps in p's tab, failing the test on an error.
func (p *person) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// get runs one action that returns a value in p's tab.
func get[T any](p *person, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.t.Fatalf("browser: %v", err)
	}
	return v
}

// navigate runs steps that lead to another page and waits until it has
// loaded, keeping its HTTP status.
func (p *person) navigate(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		p.t.Fatalf("browser: %v", err)
	}
	p.last = int(resp.Status)
}

// open loads path of the server.
func (p *person) open(path string) {
	p.t.Helper()
	p.navigate(chromedp.Navigate(p.s.url + path))
}

// press clicks the button named label (its text) and waits for the page
// it leads to.
func (p *person) press(label string) {
	p.t.Helper()
	p.navigate(chromedp.Click(button(label)))
}

// button selects the button whose text is label.
func button(label string) chromedp.Search {
	return chromedp.Search(`//button[normalize-space(.)=` + xpathString(label) + `]`)
}

// has reports whether p's page has a button labelled label.
func (p *person) has(label string) bool {
	p.t.Helper()
	return get(p, chromedp.Evaluate[bool](`document.evaluate(`+jsString(`//button[normalize-space(.)=`+xpathString(label)+`]`)+`, document, null, XPathResult.BOOLEAN_TYPE, null).booleanValue`))
}

// xpathString quotes s for an XPath expression.
func xpathString(s string) string {
	if !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return `'` + s + `'`
}

// signIn signs p in with token on the sign-in form and waits for the
// inbox.
func (p *person) signIn(token string) {
	p.t.Helper()
	p.open("/login")
	p.do(chromedp.SendKeys(chromedp.ID("token"), token))
	p.press("Sign in")
	if h := p.text("h1"); h != "Inbox" {
		p.t.Fatalf("after signing in the page is %q, want the inbox:\n%s", h, p.text("main"))
	}
}

// text is the visible text of the first element sel matches.
func (p *person) text(sel string) string {
	p.t.Helper()
	return strings.TrimSpace(get(p, chromedp.Text(chromedp.CSS(sel))))
}

// count is how many elements sel matches.
func (p *person) count(sel string) int {
	p.t.Helper()
	return get(p, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// path is the path of the page p shows.
func (p *person) path() string {
	p.t.Helper()
	loc := get(p, chromedp.Location())
	return strings.TrimPrefix(loc, p.s.url)
}

// shot saves a full-page PNG screenshot of what p shows as NAME.png in
// the screenshot directory (screenshotDir) and logs its path.
func (p *person) shot(name string) string {
	p.t.Helper()
	png := get(p, chromedp.FullScreenshot(100))
	dir := screenshotDir(p.t)
	file := filepath.Join(dir, safeName(p.t.Name()+"-"+name)+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", file)
	return file
}

// screenshotDir is $ASSISTANT_SCREENSHOTS, or assistant-screenshots in
// the system's temporary directory; made when missing.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ASSISTANT_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(systemTempDir, "assistant-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName is name with every run of other characters than letters,
// digits, '.', '_' and '-' replaced by '-'.
func safeName(name string) string { return unsafeChars.ReplaceAllString(name, "-") }

// browserPlace is a fresh data dir (the browser tests run on the
// embedded store: the pages call the same operations on either).
func browserPlace(t *testing.T) place {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	return place{name: "SQLite", flags: []string{"--data", dir}, dir: dir}
}

// mustCLI runs the binary on p as user and fails t unless it exits 0.
func (p place) mustCLI(t *testing.T, user string, args ...string) string {
	t.Helper()
	out, errOut, code := p.cli(t, nil, append([]string{"--user", user}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// session is the session cookie p's browser holds for the server; nil
// when it holds none.
func (p *person) session() *network.Cookie {
	p.t.Helper()
	cookies := get(p, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		r, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{p.s.url}})
		return r.Cookies, err
	})
	for _, c := range cookies {
		if c.Name == "assistant_session" {
			return c
		}
	}
	return nil
}

// emulate makes p's tab show pages as a browser in time zone zone (an
// IANA name) does, and with scripts off when noScript is set; it holds
// for the pages p opens next.
func (p *person) emulate(zone string, noScript bool) {
	p.t.Helper()
	get(p, func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
		if _, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
			return cdp.Empty{}, err
		}
		return cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: noScript})
	})
}

// sendHeader makes p's tab send header name: value with every request
// from now on, as a proxy in front of the server adds it.
func (p *person) sendHeader(name, value string) {
	p.t.Helper()
	get(p, func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
		return cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{name: value}})
	})
}
