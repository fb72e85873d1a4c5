package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"assistant/flow/returns"
)

// MaxBody is the largest request body the API reads, in bytes; a larger
// one is refused 413 before anything is done.
const MaxBody = 64 << 10

// MaxWait is the longest long-poll a GET of a task may ask for
// (?wait=DURATION); a longer one is refused 400.
const MaxWait = 10 * time.Minute

// Config is what a Server serves with.
type Config struct {
	// Service is the application layer over the stores, opened by the
	// caller, who closes it after the server has stopped.
	Service *returns.Service
	// Encode writes v as the command line's JSON (schema_version first,
	// times in UTC to the millisecond, none as null) and a newline.
	Encode func(w io.Writer, v any) error
	// Log receives the access log and the server's events; nil discards
	// them. No token is ever logged.
	Log *slog.Logger
	// Now is the clock of idempotency keys' 24 hours; nil is time.Now.
	Now func() time.Time
	// Metrics are the server's Prometheus metrics; nil makes new ones.
	Metrics *Metrics
	// TrustHeader names the header (such as X-Forwarded-User) whose
	// value is the signed-in person when a request comes from one of
	// TrustedProxies (docs/server.md "Sign-in behind a proxy"); "" signs
	// in by token only. Check it with ValidHeaderName.
	TrustHeader string
	// TrustedProxies are the addresses TrustHeader is taken from
	// (ParseTrustedProxies).
	TrustedProxies []netip.Prefix
	// SessionIdle is how long a page session lasts unused; 0 is
	// DefaultSessionIdle.
	SessionIdle time.Duration
}

// Server is the HTTP API of `assistant serve` (docs/server.md). Make one
// with New; it is not ready (/readyz 503) until SetReady.
type Server struct {
	svc     *returns.Service
	encode  func(w io.Writer, v any) error
	log     *slog.Logger
	now     func() time.Time
	metrics *Metrics
	// signIns and personSignIns count failed sign-ins per client
	// address and per person a refused token names.
	signIns, personSignIns *signInLimiter
	trustHeader            string
	trustedProxies         []netip.Prefix
	// ready: the stores are open and the start-up recovery scan is done;
	// draining: a shutdown began. /readyz is 200 only when ready and not
	// draining.
	ready, draining atomic.Bool
	// drain is closed when a shutdown begins: long-polls end early.
	drain     chan struct{}
	drainOnce sync.Once
	// tasks serializes the runs this process drives of one task (an
	// answer, a start): two requests for the same task in one process
	// would share one lease holder (docs/server.md "Concurrency").
	tasks keyedMutex
	// keys serializes the requests of one person with one
	// Idempotency-Key.
	keys keyedMutex
	// group gives the API's decisions, those that arrive together in
	// shared durable commits (docs/server.md "Group commit").
	group *returns.Committer
	// pages are the inbox's templates; sessions its signed-in browsers.
	pages    map[string]*template.Template
	sessions *sessions
}

// New returns a Server over cfg, not ready yet.
func New(cfg Config) *Server {
	s := &Server{svc: cfg.Service, encode: cfg.Encode, log: cfg.Log, now: cfg.Now, metrics: cfg.Metrics, drain: make(chan struct{}),
		signIns: newSignInLimiter(), personSignIns: newSignInLimiter(), trustedProxies: cfg.TrustedProxies}
	if cfg.TrustHeader != "" {
		s.trustHeader = http.CanonicalHeaderKey(cfg.TrustHeader)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	s.group = s.svc.NewCommitter(returns.GroupOptions{OnGroup: func(n int) { s.metrics.groupSizes.Observe(float64(n)) }})
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	s.pages, s.sessions = parsePages(), newSessions(cfg.SessionIdle)
	return s
}

// SetReady marks the stores open and the start-up recovery scan done:
// /readyz answers 200 from now until Drain.
func (s *Server) SetReady() { s.ready.Store(true) }

// Drain marks the server draining: /readyz answers 503, and long-polls
// in flight return what they see now.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.drainOnce.Do(func() { close(s.drain) })
}

// Handler returns the server's routes (docs/server.md "Routes") behind
// the access log and request ids; /api/ behind sign-in, the pages
// behind a session (pageRoutes).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		s.reply(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.Handler())
	// A browser's cross-site request is refused before it signs in: a
	// person signed in by the trusted proxy's header carries it on every
	// request the browser sends, so another site's form or fetch would
	// act as them. Clients that are no browser send neither Sec-Fetch-Site
	// nor Origin and pass.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.failWith(w, http.StatusForbidden, codeCrossOrigin, "a browser sent this request from another site", "call the API from this server's own pages or from a program (no Origin or Sec-Fetch-Site header)")
	}))
	api := func(pattern string, p params, h func(w http.ResponseWriter, r *http.Request, user string)) {
		mux.Handle(pattern, cop.Handler(s.signedIn(s.strictQuery(p, h))))
	}
	none := params{}
	api("POST /api/v1/tasks", none, s.idempotent(s.startTask))
	api("GET /api/v1/tasks", params{single: []string{"awaiting_me", "limit", "cursor"}, multi: []string{"status"}}, s.listTasks)
	api("GET /api/v1/tasks/{task}", params{single: []string{"wait"}}, s.showTask)
	api("POST /api/v1/tasks/{task}/answers", none, s.idempotent(s.answerTask))
	api("GET /api/v1/tasks/{task}/history", none, s.taskHistory)
	api("GET /api/v1/orders/{order}", none, s.showOrder)
	s.pageRoutes(mux)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.failWith(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), "the routes are listed in docs/server.md")
	})
	return s.logged(mux)
}

// readyz is 200 once ready and until draining, else 503.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		w.Header().Set("Retry-After", "1")
		s.reply(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	case !s.ready.Load():
		w.Header().Set("Retry-After", "1")
		s.reply(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
	default:
		s.reply(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

// reply writes v as JSON with status.
func (s *Server) reply(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	if err := s.encode(&b, v); err != nil {
		s.log.Error("render a response", "err", err)
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"schema_version":` + fmt.Sprint(returns.SchemaVersion) + `,"error":{"code":"internal","message":"the response could not be rendered"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// failDecode answers an error of decode: 413 for a body too large, else
// as fail.
func (s *Server) failDecode(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		s.failWith(w, http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the request body is larger than %d bytes", MaxBody), "")
		return
	}
	s.fail(w, err)
}

// keyedMutex is a mutex per key, made when first locked and dropped when
// its last holder unlocks.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// lock locks key (waiting for its holder, or until ctx ends) and returns
// its unlock. Errors: ctx's.
func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	got := make(chan struct{})
	go func() { e.mu.Lock(); close(got) }()
	select {
	case <-got:
		return func() { e.mu.Unlock(); release() }, nil
	case <-ctx.Done():
		go func() { <-got; e.mu.Unlock(); release() }()
		return nil, ctx.Err()
	}
}
