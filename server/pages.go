package server

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// The pages of the approvals inbox (docs/inbox.md): server-rendered with
// html/template (every value escaped for where it lands), their
// stylesheet and two small scripts (local times, live refresh) embedded
// in the binary, every action a plain form post that works without
// JavaScript.

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/*
var assetFS embed.FS

// contentSecurityPolicy lets a page load only the server's own
// stylesheet and script (no inline script or style), post forms only to
// the server, and be framed by no one.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// pageNames are the templates, each drawn inside templates/layout.html.
var pageNames = []string{"login", "inbox", "task", "notice"}

// pageFuncs are the helpers the templates call.
var pageFuncs = template.FuncMap{
	// utc is t in UTC to the second, as a person reads it.
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	// machine is t as a <time datetime>: RFC 3339 UTC, milliseconds.
	"machine": func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") },
	// readable is text with each RFC 3339 UTC time in it ("revoked at
	// 2026-12-03T01:09:14Z") as the pages write times, "2026-12-03
	// 01:09:14 UTC".
	"readable": func(text string) string { return rfc3339UTC.ReplaceAllString(text, "$1 $2 UTC") },
}

// rfc3339UTC matches an RFC 3339 time in UTC, to the second or finer.
var rfc3339UTC = regexp.MustCompile(`\b(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z\b`)

// stepNames word the nodes of the return-request flow (docs/design.md
// "The return-request flow") as the steps of a timeline.
var stepNames = map[string]string{
	returns.NodeLookup:    "Look up the order",
	returns.NodeAskReason: "Ask for a reason",
	returns.NodePrepare:   "Prepare the draft",
	returns.NodeReview:    "Ask for approval",
	returns.NodeReview2:   "Ask for the second approval",
	returns.NodeSubmit:    "Check the approvals again and submit",
	returns.NodeCancel:    "Cancel the request",
	returns.NodeGiveUp:    "Give up",
}

// parsePages parses every page with the layout; a template that does not
// parse is a bug of the build, found by any test that serves a page.
func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(pageFuncs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// layoutData is what templates/layout.html draws around a page: its
// title, the person signed in ("" on the sign-in form), whether the
// trusted proxy signed them in (no sign-out then), whether it loads the
// refresh script, and the page's own data.
type layoutData struct {
	Title   string
	User    string
	Proxied bool
	Refresh bool
	Page    any
}

// noticePage is a page that only says something: a title and a message.
type noticePage struct {
	Title   string
	Message string
}

// render writes page name with data, signed in as user, with status.
func (s *Server) render(w http.ResponseWriter, status int, name, user string, data any) {
	d := layoutData{User: user, Page: data}
	if rec, ok := w.(*recorder); ok && user != "" {
		d.Proxied = rec.proxied
	}
	switch p := data.(type) {
	case noticePage:
		d.Title = p.Title
	case loginPage:
		d.Title = "Sign in"
	case *inboxPage:
		d.Title, d.Refresh = "Inbox", true
	case *taskPage:
		d.Title = "Task " + p.View.Task
	}
	var b bytes.Buffer
	if err := s.pages[name].Execute(&b, d); err != nil {
		s.log.Error("render a page", "page", name, "err", err)
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString("<!doctype html><title>Error</title><p>The page could not be drawn.</p>\n")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// pageHeaders adds the headers every page and asset carries: the
// Content-Security-Policy, no MIME sniffing, no framing, no referrer
// sent to other sites.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// pageRoutes adds the pages and their assets to mux. Every page is
// behind http.CrossOriginProtection: a form posted from another origin
// is refused 403 before it is read.
func (s *Server) pageRoutes(mux *http.ServeMux) {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.render(w, http.StatusForbidden, "notice", "", noticePage{Title: "Refused", Message: "This form was sent from another site, so it was refused and nothing changed. Open the inbox on this server and answer there."})
	}))
	page := func(pattern string, h http.Handler) { mux.Handle(pattern, pageHeaders(cop.Handler(h))) }
	page("GET /{$}", http.RedirectHandler("/inbox", http.StatusSeeOther))
	page("GET /login", http.HandlerFunc(s.showLogin))
	page("POST /login", http.HandlerFunc(s.login))
	page("POST /logout", http.HandlerFunc(s.logout))
	page("GET /inbox", s.signedInPage(s.inbox))
	page("GET /tasks/{task}", s.signedInPage(s.taskPageHandler))
	page("POST /tasks/{task}/answers", s.signedInPage(s.answerPage))
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the embed pattern above names the folder
	}
	mux.Handle("GET /assets/", pageHeaders(http.StripPrefix("/assets/", http.FileServerFS(assets))))
}

// inboxPage is the inbox's data (templates/inbox.html).
type inboxPage struct {
	Filters []filterLink
	Filter  string
	Rows    []inboxRow
	Empty   string
	// Next and First are the links to the next page and back to the
	// first; "" when there is none.
	Next, First string
	Now         time.Time
}

// filterLink is one filter of the inbox as a link.
type filterLink struct {
	Label, URL string
	Current    bool
}

// inboxRow is one task of the inbox as shown.
type inboxRow struct {
	business.InboxRow
	URL       string
	ExpiresIn string
	Expired   bool
}

// filterLabels word the inbox filters (returns.InboxFilters).
var filterLabels = map[string]string{
	business.InboxWaiting: "Waiting for me",
	business.InboxMine:    "My requests",
	business.InboxAll:     "All I may see",
}

// emptyInbox says why a filter lists nothing.
var emptyInbox = map[string]string{
	business.InboxWaiting: "Nothing waits for your approval now.",
	business.InboxMine:    "None of your requests waits for anyone.",
	business.InboxAll:     "No task you may see is waiting.",
}

// inbox is GET /inbox?filter=F&at=KEY&after=TASK: one page of the tasks
// the filter selects, soonest expiry first (returns.Service.Inbox).
func (s *Server) inbox(w http.ResponseWriter, r *http.Request, user string) {
	q := r.URL.Query()
	p, err := s.svc.Inbox(r.Context(), returns.InboxOptions{User: user, Filter: q.Get("filter"), After: returns.InboxCursor{Key: q.Get("at"), Task: q.Get("after")}})
	if err != nil {
		if returns.KindOf(returns.Classify(err)) == returns.ErrInvalid {
			msg, _ := returns.Describe(returns.Classify(err), APIWords)
			s.render(w, http.StatusBadRequest, "notice", user, noticePage{Title: "No such inbox", Message: msg + "."})
			return
		}
		s.pageFailed(w, err)
		return
	}
	d := &inboxPage{Filter: p.Filter, Now: p.Now, Empty: emptyInbox[p.Filter]}
	for _, f := range returns.InboxFilters {
		d.Filters = append(d.Filters, filterLink{Label: filterLabels[f], URL: "/inbox?filter=" + f, Current: f == p.Filter})
	}
	for _, row := range p.Rows {
		ir := inboxRow{InboxRow: row, URL: "/tasks/" + url.PathEscape(row.Task)}
		if ir.Owner == user {
			ir.Owner = "" // named only when it is someone else's task
		}
		if !row.ExpiresAt.IsZero() {
			ir.Expired = !p.Now.Before(row.ExpiresAt)
			ir.ExpiresIn = durationWords(row.ExpiresAt.Sub(p.Now))
		}
		d.Rows = append(d.Rows, ir)
	}
	if p.Next != nil {
		d.Next = "/inbox?" + url.Values{"filter": {p.Filter}, "at": {p.Next.Key}, "after": {p.Next.Task}}.Encode()
	}
	if q.Get("after") != "" {
		d.First = "/inbox?filter=" + p.Filter
	}
	s.render(w, http.StatusOK, "inbox", user, d)
}

// durationWords is d as a person reads a time left: "4m 05s", "2h 10m",
// "3d 4h"; "expired" for none left.
func durationWords(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
