package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"assistant/flow/returns"
)

// maxKey is the longest Idempotency-Key taken, in bytes.
const maxKey = 255

// idempotent wraps a POST route (docs/server.md "Idempotency"): a
// request with an Idempotency-Key whose person sent the same key with
// the same request (route and body) within 24 hours gets the first
// response again, status and body, with Idempotent-Replayed: true; the
// same key with another request is 422. A first response is kept
// durably before it is sent, unless it is a failure worth retrying (5xx).
func (s *Server) idempotent(h func(w http.ResponseWriter, r *http.Request, user string)) func(w http.ResponseWriter, r *http.Request, user string) {
	return func(w http.ResponseWriter, r *http.Request, user string) {
		key, given, err := oneHeader(r, "Idempotency-Key")
		if err != nil {
			s.fail(w, err)
			return
		}
		if !given {
			h(w, r, user)
			return
		}
		if !fitKey(key) {
			s.fail(w, fmt.Errorf("%w: the Idempotency-Key must be 1 to %d visible ASCII characters (! to ~, no space)", returns.ErrInvalid, maxKey))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			s.failDecode(w, err)
			return
		}
		sum := sha256.Sum256([]byte(r.Method + " " + r.URL.Path + "\n" + string(body)))
		hash := hex.EncodeToString(sum[:])
		unlock, err := s.keys.lock(r.Context(), user+"\x00"+key)
		if err != nil {
			s.fail(w, err)
			return
		}
		defer unlock()
		first, ok, err := s.svc.StoredResponse(r.Context(), user, key)
		if err != nil {
			s.fail(w, err)
			return
		}
		if ok {
			s.replay(w, first, hash)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		c := &captured{header: http.Header{}}
		h(c, r, user)
		resp := returns.KeptResponse{RequestHash: hash, Status: c.status, Body: c.body.Bytes()}
		if c.status < 500 {
			kept, err := s.svc.KeepResponse(r.Context(), user, key, resp)
			if err != nil {
				// The decision stands; a retry with the key runs the
				// request again and learns the truth from the stores.
				s.log.Error("keep the response of an idempotency key", "request_id", w.Header().Get("X-Request-Id"), "err", err)
			} else if kept.RequestHash != hash || kept.Status != resp.Status || !bytes.Equal(kept.Body, resp.Body) {
				// Another request with the key (on another server) kept
				// its response first: that one is the first response.
				s.replay(w, kept, hash)
				return
			}
		}
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(c.body.Bytes())
	}
}

// replay sends first, the response kept for a key, to a request whose
// hash is hash: 422 when it is another request than first answered.
func (s *Server) replay(w http.ResponseWriter, first returns.KeptResponse, hash string) {
	if first.RequestHash != hash {
		s.failWith(w, http.StatusUnprocessableEntity, codeKeyReused,
			"the Idempotency-Key was sent before with another request", "send a new key for a new request, or the first request again to get its response")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(first.Status)
	_, _ = w.Write(first.Body)
}

// fitKey reports whether key may be an Idempotency-Key.
func fitKey(key string) bool {
	if key == "" || len(key) > maxKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// captured is a ResponseWriter that keeps the response, to be kept for
// its key before it is sent.
type captured struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header { return c.header }

func (c *captured) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captured) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}
