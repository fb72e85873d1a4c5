package server

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"assistant/flow/returns"
)

// Failed sign-ins per client address and per person (docs/server.md
// "Access tokens"): a burst of SignInBurst, then one every SignInEvery.
// Past that, a request from the address is refused 429 before its token
// is looked at, and a request whose refused token names the person is
// refused 429 instead of 401.
const (
	SignInBurst = 10
	SignInEvery = time.Second
	// maxLimited bounds the addresses (or persons) remembered; past it
	// the oldest memory is dropped whole (a flood starts afresh).
	maxLimited = 10000
)

// signedIn wraps an API route: before the server is ready, 503 with
// Retry-After (code not_ready); then the request must sign in, by the
// trusted header from a trusted proxy (proxyUser) or by its bearer
// token (returns.Service.Authenticate); h runs as its person. Without a
// token, or with one that does not sign in, 401 with WWW-Authenticate;
// too many failures from one address, or naming one person, 429 with
// Retry-After.
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
		if user, fromProxy, err := s.proxyUser(w, r, addr); fromProxy {
			// The proxy signed the person in; a refusal is its
			// misconfiguration, not a guess, and counts against no limit
			// (the proxy's address is every one of its users').
			if err != nil {
				s.fail(w, err)
				return
			}
			s.serveAs(w, r, user, h)
			return
		}
		if wait, limited := s.signIns.limited(addr); limited {
			s.tooMany(w, wait, "from this address")
			return
		}
		user, err := s.tokenUser(r)
		if err == nil {
			s.serveAs(w, r, user, h)
			return
		}
		if returns.KindOf(returns.Classify(err)) == returns.ErrUnauthenticated {
			s.signIns.failed(addr)
			var refused *returns.TokenRefusedError
			if errors.As(err, &refused) {
				if wait, limited := s.personSignIns.limited(refused.User); limited {
					s.tooMany(w, wait, "with tokens of this person")
					return
				}
				s.personSignIns.failed(refused.User)
			}
		}
		s.fail(w, err)
	})
}

// serveAs runs h as user, whom the access log names.
func (s *Server) serveAs(w http.ResponseWriter, r *http.Request, user string, h func(w http.ResponseWriter, r *http.Request, user string)) {
	if rec, ok := w.(*recorder); ok {
		rec.user = user
	}
	h(w, r, user)
}

// tooMany answers 429 with Retry-After: wait, rounded up to whole
// seconds; from says whose failed sign-ins ran out.
func (s *Server) tooMany(w http.ResponseWriter, wait time.Duration, from string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	s.failWith(w, http.StatusTooManyRequests, codeRateLimited, "too many failed sign-ins "+from, fmt.Sprintf("try again in %s", wait.Round(time.Second)))
}

// tokenUser is the person r's bearer token signs in as. Errors:
// ErrUnauthenticated without one token, or for one that does not sign
// in; storage errors.
func (s *Server) tokenUser(r *http.Request) (string, error) {
	token, given := bearer(r)
	if token == "" {
		msg := "the request carries no access token"
		switch {
		case len(r.Header.Values("Authorization")) > 1:
			msg = "the request carries more than one Authorization header"
		case given:
			msg = "the Authorization header is not a bearer token"
		}
		return "", fmt.Errorf("%s: %w", msg, returns.ErrUnauthenticated)
	}
	return s.svc.Authenticate(r.Context(), token)
}

// proxyUser is the person the trusted header (Config.TrustHeader) of a
// request from a trusted proxy names; fromProxy reports whether r is
// such a request. From any other address the header is ignored (logged
// as a warning): that request signs in by its token. Errors (with
// fromProxy): ErrUnauthenticated for the header given more than once,
// beside an Authorization header, or naming no valid user.
func (s *Server) proxyUser(w http.ResponseWriter, r *http.Request, addr string) (user string, fromProxy bool, err error) {
	if s.trustHeader == "" {
		return "", false, nil
	}
	vs := r.Header.Values(s.trustHeader)
	if len(vs) == 0 {
		return "", false, nil
	}
	if !s.trusted(addr) {
		s.log.Warn("trusted header from an untrusted address ignored", "request_id", w.Header().Get("X-Request-Id"), "header", s.trustHeader, "remote", addr)
		return "", false, nil
	}
	switch {
	case len(vs) > 1:
		return "", true, fmt.Errorf("the request carries %d %s headers: %w", len(vs), s.trustHeader, returns.ErrUnauthenticated)
	case len(r.Header.Values("Authorization")) > 0:
		return "", true, fmt.Errorf("the request carries both %s and Authorization; a request signs in one way: %w", s.trustHeader, returns.ErrUnauthenticated)
	case vs[0] == "":
		return "", true, fmt.Errorf("the %s header is empty: %w", s.trustHeader, returns.ErrUnauthenticated)
	}
	if err := returns.ValidUser(vs[0]); err != nil {
		return "", true, fmt.Errorf("the %s header names no valid user: %v: %w", s.trustHeader, err, returns.ErrUnauthenticated)
	}
	return vs[0], true, nil
}

// trusted reports whether addr is in one of the trusted proxies'
// prefixes.
func (s *Server) trusted(addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	for _, p := range s.trustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads --trusted-proxy values: each an IP address
// (the one address) or a CIDR prefix ("10.0.0.0/8", "::1/128"). Errors:
// ErrInvalid naming the value that is neither.
func ParseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		v = strings.TrimSpace(v)
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(v)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("%w: trusted proxy %q is neither an IP address nor a CIDR prefix such as 10.0.0.0/8", returns.ErrInvalid, v)
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// ValidHeaderName reports whether name may be the trusted header: an
// HTTP header name (letters, digits and !#$%&'*+-.^_`|~) that is not one
// the server reads for itself (Authorization, Idempotency-Key,
// X-Request-Id). Errors: ErrInvalid.
func ValidHeaderName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the trusted header name is empty", returns.ErrInvalid)
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
		if !ok {
			return fmt.Errorf("%w: %q is not an HTTP header name", returns.ErrInvalid, name)
		}
	}
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Idempotency-Key", "X-Request-Id", "Cookie":
		return fmt.Errorf("%w: %s is a header the server reads for itself; name the header the proxy sets, such as X-Forwarded-User", returns.ErrInvalid, name)
	}
	return nil
}

// clientAddr is the address a request came from, without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// signInLimiter counts failed sign-ins per key (an address, a person)
// with a token bucket each (golang.org/x/time/rate).
type signInLimiter struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newSignInLimiter() *signInLimiter {
	return &signInLimiter{m: map[string]*rate.Limiter{}}
}

// limiter is key's bucket, made full when first asked for.
func (l *signInLimiter) limiter(key string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[key]
	if !ok {
		if len(l.m) >= maxLimited {
			l.m = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Every(SignInEvery), SignInBurst)
		l.m[key] = lim
	}
	return lim
}

// limited reports whether key has used up its failed sign-ins, and how
// long until it may try again.
func (l *signInLimiter) limited(key string) (time.Duration, bool) {
	lim := l.limiter(key)
	now := time.Now()
	if lim.TokensAt(now) >= 1 {
		return 0, false
	}
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return max(wait, time.Second), true
}

// failed counts one failed sign-in of key.
func (l *signInLimiter) failed(key string) { l.limiter(key).Allow() }
