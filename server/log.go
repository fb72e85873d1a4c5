package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// maxRequestID is the longest X-Request-Id a client may give; a longer
// one, or one with other characters than letters, digits, '-', '_' and
// '.', is replaced by the server's own.
const maxRequestID = 64

// recorder is the ResponseWriter of the access log: the status and size
// sent, and the person signed in (set by signedIn and signedInPage), and
// whether the trusted proxy's header signed them in (a page then offers
// no sign-out: the proxy keeps the sign-in).
type recorder struct {
	http.ResponseWriter
	status  int
	bytes   int
	user    string
	proxied bool
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logged wraps next with a request id (X-Request-Id, the client's when
// it gives a fitting one), one access-log line per request (method,
// route, path, status, bytes, duration, person; never a header) and the
// latency histogram by route.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !fitRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		took := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.metrics.latency.WithLabelValues(route, strconv.Itoa(rec.status)).Observe(took.Seconds())
		s.log.Info("request", "request_id", id, "method", r.Method, "route", route, "path", r.URL.Path,
			"status", rec.status, "bytes", rec.bytes, "duration_ms", float64(took.Microseconds())/1000, "user", rec.user, "remote", clientAddr(r))
	})
}

// fitRequestID reports whether a client's request id may be kept.
func fitRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// newRequestID is 16 random hex digits.
func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
