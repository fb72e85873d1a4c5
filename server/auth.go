package server

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"assistant/flow/returns"
)

// Failed sign-ins per client address (docs/server.md "Sign-in"): a burst
// of SignInBurst, then one every SignInEvery. Past that, a request with a
// token is refused 429 before its token is looked at.
const (
	SignInBurst = 10
	SignInEvery = time.Second
	// maxLimited bounds the addresses remembered; past it the oldest
	// memory is dropped whole (a flood of addresses starts afresh).
	maxLimited = 10000
)

// signedIn wraps an API route: before the server is ready, 503 with
// Retry-After (code not_ready); then the request's bearer token must sign in
// (returns.Service.Authenticate); h runs as its person. Without a token,
// or with one that does not sign in, 401 with WWW-Authenticate; too many
// failures from one address, 429 with Retry-After.
func (s *Server) signedIn(h func(w http.ResponseWriter, r *http.Request, user string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			// Until the recovery scan is done a task may still be held
			// by a dead process: nothing is answered from half a truth.
			w.Header().Set("Retry-After", "1")
			s.failWith(w, http.StatusServiceUnavailable, codeNotReady, "the server is starting: its recovery scan is not done yet", "try again once GET /readyz answers 200")
			return
		}
		addr := clientAddr(r)
		if wait, limited := s.signIns.limited(addr); limited {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			s.failWith(w, http.StatusTooManyRequests, codeRateLimited, "too many failed sign-ins from this address", fmt.Sprintf("try again in %s", wait.Round(time.Second)))
			return
		}
		token, given := bearer(r)
		if token == "" {
			msg := "the request carries no access token"
			switch {
			case len(r.Header.Values("Authorization")) > 1:
				msg = "the request carries more than one Authorization header"
			case given:
				msg = "the Authorization header is not a bearer token"
			}
			s.signIns.failed(addr)
			s.fail(w, fmt.Errorf("%s: %w", msg, returns.ErrUnauthenticated))
			return
		}
		user, err := s.svc.Authenticate(r.Context(), token)
		if err != nil {
			if returns.KindOf(returns.Classify(err)) == returns.ErrUnauthenticated {
				s.signIns.failed(addr)
			}
			s.fail(w, err)
			return
		}
		if rec, ok := w.(*recorder); ok {
			rec.user = user
		}
		h(w, r, user)
	})
}

// clientAddr is the address a request came from, without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// signInLimiter counts failed sign-ins per address with a token bucket
// each (golang.org/x/time/rate).
type signInLimiter struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newSignInLimiter() *signInLimiter {
	return &signInLimiter{m: map[string]*rate.Limiter{}}
}

// limiter is addr's bucket, made full when first asked for.
func (l *signInLimiter) limiter(addr string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[addr]
	if !ok {
		if len(l.m) >= maxLimited {
			l.m = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Every(SignInEvery), SignInBurst)
		l.m[addr] = lim
	}
	return lim
}

// limited reports whether addr has used up its failed sign-ins, and how
// long until it may try again.
func (l *signInLimiter) limited(addr string) (time.Duration, bool) {
	lim := l.limiter(addr)
	now := time.Now()
	if lim.TokensAt(now) >= 1 {
		return 0, false
	}
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return max(wait, time.Second), true
}

// failed counts one failed sign-in from addr.
func (l *signInLimiter) failed(addr string) { l.limiter(addr).Allow() }
