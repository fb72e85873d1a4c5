package server

import (
	"crypto/rand"
	"encoding/base64"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"assistant/flow/returns"
)

// Sessions of the pages (docs/inbox.md "Sign-in and sessions").
const (
	// SessionCookie is the name of the cookie that carries a session id.
	SessionCookie = "assistant_session"
	// DefaultSessionIdle is how long a session lasts without a request;
	// each request of its person starts the time again.
	DefaultSessionIdle = 30 * time.Minute
	// sessionIDBytes is how many random bytes a session id has.
	sessionIDBytes = 32
	// maxSessions bounds the sessions one process keeps; past it the ones
	// idle longest are dropped first.
	maxSessions = 100000
)

// session is one signed-in browser: its person, the access token it
// signed in with (kept in this process's memory only, never sent back:
// every request signs in with it again, so a revoked or expired token
// ends the session), and when it was last used.
type session struct {
	user, token string
	last        time.Time
}

// sessions are the signed-in browsers of one server process, by session
// id, in memory: a restart signs everyone out, and two serve processes
// do not share them.
type sessions struct {
	mu   sync.Mutex
	m    map[string]*session
	idle time.Duration
}

func newSessions(idle time.Duration) *sessions {
	return &sessions{m: map[string]*session{}, idle: idle}
}

// add makes a new session for user signed in with token at now and
// returns its id (32 random bytes, base64url).
func (ss *sessions) add(user, token string, now time.Time) (string, error) {
	b := make([]byte, sessionIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= maxSessions {
		ss.sweep(now)
	}
	ss.m[id] = &session{user: user, token: token, last: now}
	return id, nil
}

// sweep drops the sessions idle past their time; if none was, the half
// idle longest. ss.mu is held.
func (ss *sessions) sweep(now time.Time) {
	for id, s := range ss.m {
		if now.Sub(s.last) >= ss.idle {
			delete(ss.m, id)
		}
	}
	if len(ss.m) < maxSessions {
		return
	}
	cut := now.Add(-ss.idle / 2)
	for id, s := range ss.m {
		if s.last.Before(cut) {
			delete(ss.m, id)
		}
	}
}

// use returns the session id names at now and marks it used; a session
// idle for ss.idle or longer is ended and not returned.
func (ss *sessions) use(id string, now time.Time) (session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[id]
	if !ok {
		return session{}, false
	}
	if now.Sub(s.last) >= ss.idle {
		delete(ss.m, id)
		return session{}, false
	}
	s.last = now
	return *s, true
}

// end ends the session id, if there is one.
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// setSessionCookie sends the session cookie: HttpOnly, SameSite=Strict,
// Secure under TLS, for the whole site; an empty id expires it.
func setSessionCookie(w http.ResponseWriter, r *http.Request, id string) {
	c := &http.Cookie{Name: SessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if id == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// signedInPage wraps a page: before the server is ready, a 503 page; a
// request from a trusted proxy that names its person in the trusted
// header (Config.TrustHeader) runs h as that person, with no session (a
// header the proxy got wrong is a 401 page saying why); otherwise,
// without a live session (no cookie, an unknown or idle one, or one whose
// token no longer signs in), a redirect to /login; else h runs as the
// session's person.
func (s *Server) signedInPage(h func(w http.ResponseWriter, r *http.Request, user string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			w.Header().Set("Retry-After", "1")
			s.render(w, http.StatusServiceUnavailable, "notice", "", noticePage{Title: "Starting", Message: "The server is starting: its recovery scan is not done yet. Try again in a moment."})
			return
		}
		if user, fromProxy, err := s.proxyUser(w, r, clientAddr(r)); fromProxy {
			if err != nil {
				msg, _ := returns.Describe(returns.Classify(err), APIWords)
				s.render(w, http.StatusUnauthorized, "notice", "", noticePage{Title: "Not signed in", Message: "The sign-on proxy in front of this server sent a request that signs no one in: " + msg})
				return
			}
			if rec, ok := w.(*recorder); ok {
				rec.user, rec.proxied = user, true
			}
			h(w, r, user)
			return
		}
		c, err := r.Cookie(SessionCookie)
		if err != nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		sess, ok := s.sessions.use(c.Value, s.now())
		if ok {
			if _, err := s.svc.Authenticate(r.Context(), sess.token); err != nil {
				s.sessions.end(c.Value)
				ok = false
			}
		}
		if !ok {
			setSessionCookie(w, r, "")
			http.Redirect(w, r, "/login?ended=1", http.StatusSeeOther)
			return
		}
		if rec, ok := w.(*recorder); ok {
			rec.user = sess.user
		}
		h(w, r, sess.user)
	})
}

// loginPage is the sign-in form's data: a message about the previous
// attempt or session, and whether it is an error.
type loginPage struct {
	Message string
	Failed  bool
}

// showLogin is GET /login: the sign-in form, saying why when a session
// ended or the person signed out.
func (s *Server) showLogin(w http.ResponseWriter, r *http.Request) {
	var p loginPage
	switch {
	case r.URL.Query().Has("signed_out"):
		p.Message = "You signed out."
	case r.URL.Query().Has("ended"):
		p.Message = "Your session ended. Sign in again."
	}
	s.render(w, http.StatusOK, "login", "", p)
}

// login is POST /login: the form's token signs in (as an API token
// does, rate-limited per address alike), a new session is made and its
// cookie set, and the browser is sent to /inbox. A token that does not
// sign in shows the form again, 401, with why.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		w.Header().Set("Retry-After", "1")
		s.render(w, http.StatusServiceUnavailable, "notice", "", noticePage{Title: "Starting", Message: "The server is starting: its recovery scan is not done yet. Try again in a moment."})
		return
	}
	addr := clientAddr(r)
	if wait, limited := s.signIns.limited(addr); limited {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		s.render(w, http.StatusTooManyRequests, "login", "", loginPage{Failed: true, Message: "Too many failed sign-ins from this address: try again in " + wait.Round(time.Second).String() + "."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	f, err := oneForm(r)
	if err != nil {
		s.render(w, http.StatusBadRequest, "login", "", loginPage{Failed: true, Message: "Not signed in: " + err.Error() + "."})
		return
	}
	token := f.Get("token")
	user, err := s.svc.Authenticate(r.Context(), token)
	if err != nil {
		if returns.KindOf(returns.Classify(err)) == returns.ErrUnauthenticated || token == "" {
			s.signIns.failed(addr)
			msg, _ := returns.Describe(returns.Classify(err), APIWords)
			s.render(w, http.StatusUnauthorized, "login", "", loginPage{Failed: true, Message: "That access token does not sign in: " + msg + "."})
			return
		}
		s.pageFailed(w, err)
		return
	}
	id, err := s.sessions.add(user, token, s.now())
	if err != nil {
		s.pageFailed(w, err)
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.user = user
	}
	setSessionCookie(w, r, id)
	http.Redirect(w, r, "/inbox", http.StatusSeeOther)
}

// logout is POST /logout: the session ends and its cookie is expired;
// the browser is sent to the sign-in form.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	setSessionCookie(w, r, "")
	http.Redirect(w, r, "/login?signed_out=1", http.StatusSeeOther)
}

// pageFailed answers err, an error that is no one's input (storage, a
// request cut), as a page with its status.
func (s *Server) pageFailed(w http.ResponseWriter, err error) {
	status, _ := statusOf(err)
	msg, _ := returns.Describe(returns.Classify(err), APIWords)
	s.log.Error("page", "err", err)
	s.render(w, status, "notice", "", noticePage{Title: "Something went wrong", Message: msg})
}
