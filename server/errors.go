package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"assistant/flow/returns"
	"assistant/runs"
)

// Error codes of the JSON error object that only the server sends; the
// others are the command line's (docs/json.md "Errors").
const (
	codeUnauthenticated = "unauthenticated"
	codeRateLimited     = "rate_limited"
	codeKeyReused       = "idempotency_key_reused"
	codeTooLarge        = "too_large"
	codeNotReady        = "not_ready"
	codeCrossOrigin     = "cross_origin"
)

// errorBody is the JSON error object, rendered as the command line's:
// {"schema_version", "error": {"code", "message", "hint"}}.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint" output:"absent-when-zero"`
}

// statusOf is the HTTP status and error code of err, an error of the
// application layer (docs/server.md "Status codes"): invalid input 400,
// conflict 409, busy 503 (a store locked past its timeout, or the task
// driven by another process now: runs.ErrBusy), not found 404, unauthenticated 401, a request
// cancelled 503, anything else (inconsistent stores, storage) 500.
func statusOf(err error) (int, string) {
	err = returns.Classify(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable, "interrupted"
	}
	if errors.Is(err, runs.ErrBusy) {
		// Another process (a server, a command) drives the task at this
		// moment: what this request comes to is not known until it lets
		// go, so it is to be tried again, never a final 409 that an
		// Idempotency-Key would keep.
		return http.StatusServiceUnavailable, "conflict"
	}
	switch returns.KindOf(err) {
	case returns.ErrInvalid:
		return http.StatusBadRequest, "invalid_input"
	case returns.ErrBusy:
		return http.StatusServiceUnavailable, "conflict"
	case returns.ErrConflict:
		return http.StatusConflict, "conflict"
	case returns.ErrNotFound:
		return http.StatusNotFound, "not_found"
	case returns.ErrUnauthenticated:
		return http.StatusUnauthorized, codeUnauthenticated
	case returns.ErrInconsistent:
		return http.StatusInternalServerError, returns.CodeInconsistent
	case returns.ErrInterrupted:
		return http.StatusServiceUnavailable, "interrupted"
	}
	return http.StatusInternalServerError, "internal"
}

// retryAfterBusy is the Retry-After of a busy answer, in seconds.
const retryAfterBusy = 1

// fail answers err as the JSON error object with its status; a busy
// store says when to try again, an unauthenticated request how to sign
// in.
func (s *Server) fail(w http.ResponseWriter, err error) {
	status, code := statusOf(err)
	message, hint := returns.Describe(returns.Classify(err), APIWords)
	switch status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterBusy))
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="assistant"`)
	}
	s.failWith(w, status, code, message, hint)
}

// failWith answers the error object {code, message, hint} with status.
func (s *Server) failWith(w http.ResponseWriter, status int, code, message, hint string) {
	s.reply(w, status, &errorBody{Error: errorObject{Code: code, Message: message, Hint: hint}})
}

// APIWords words the application layer's inputs and hints for a client
// of the API: an input as its JSON field or query parameter, an
// operation as the route that does it. The service a server runs over
// is opened with it (returns.Config.Wording), so the hints a view
// carries read the same way.
var APIWords returns.Wording = apiWording{}

type apiWording struct{}

// apiInputs are the inputs whose JSON field is not their own name.
var apiInputs = map[returns.Input]string{
	returns.InputDraft:      "draft_id",
	returns.InputDraftTTL:   "draft_ttl",
	returns.InputAwaitingMe: "awaiting_me",
}

func (apiWording) Input(i returns.Input) string {
	if f, ok := apiInputs[i]; ok {
		return f
	}
	return string(i)
}

func (w apiWording) Hint(h returns.Hint) string {
	return returns.JoinWords(h, w.operation(h), w)
}

// operation is h's operation as the request that does it.
func (w apiWording) operation(h returns.Hint) string {
	task := "/api/v1/tasks/" + h.Task
	var fields []string
	for _, in := range h.With {
		if in.Value == "" {
			fields = append(fields, fmt.Sprintf("%q", w.Input(in.Input)))
			continue
		}
		fields = append(fields, fmt.Sprintf("%q: %q", w.Input(in.Input), in.Value))
	}
	with := ""
	if len(fields) > 0 {
		with = " with {" + strings.Join(fields, ", ") + "}"
	}
	switch h.Do {
	case "":
		return strings.Join(fields, ", ")
	case returns.DoShow:
		return "GET " + task
	case returns.DoWait:
		return "GET " + task + "?wait=30s"
	case returns.DoHistory:
		return "GET " + task + "/history"
	case returns.DoList:
		return "GET /api/v1/tasks"
	case returns.DoAnswer:
		if h.Ask == returns.KindNeedReason {
			return "POST " + task + `/answers with {"reason": "…"}`
		}
		return "POST " + task + `/answers with {"action": "approve"} (or cancel, edit with a reason, revise with a comment)`
	case returns.DoResume:
		if with == "" {
			with = " with {}"
		}
		return "POST " + task + "/answers" + with
	}
	// Stop, recover, verify, backup: an operator's, on the command line.
	words := []string{"assistant", string(h.Do)}
	if h.Task != "" {
		words = append(words, h.Task)
	}
	return "an operator's `" + strings.Join(append(words, h.Args...), " ") + "`"
}
