package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

// TestRequestsMeanOneThingOrAreRefused (docs/server.md "Strict
// requests"): a body with a key twice (at any depth, or spelled with an
// escape), a key of another case, an unknown key, a null field, null or
// another JSON value than an object, something after the object, bad
// UTF-8, an escaped lone surrogate (which encoding/json reads as
// U+FFFD); a repeated Idempotency-Key or an empty one; a repeated,
// malformed or unknown query parameter: each is 400 invalid_input with
// the error object, and the task is as it was. Two Authorization headers
// are 401, as a request signed in as no one person.
func TestRequestsMeanOneThingOrAreRefused(t *testing.T) {
	t.Parallel()
	svc := openService(t, 2)
	ctx := context.Background()
	made, err := svc.MakeToken(ctx, returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Start(ctx, returns.StartOptions{Task: "t1", Order: "O1", Reason: "broken", User: "alice", TTL: 300 * time.Second, Approvals: 1}); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Service: svc, Encode: encodeJSON})
	s.SetReady()
	h := s.Handler()
	const answers, tasks = "/api/v1/tasks/t1/answers", "/api/v1/tasks"
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		status                   int
		says                     string
	}{
		{"DuplicateKey", "POST", answers, `{"action":"cancel","action":"approve"}`, nil, 400, `"action" twice`},
		{"DuplicateKeyByEscape", "POST", answers, `{"action":"cancel","act\u0069on":"approve"}`, nil, 400, `"action" twice`},
		{"DuplicateKeyNested", "POST", answers, `{"action":"approve","comment":{"a":1,"a":2}}`, nil, 400, `"comment.a" twice`},
		{"DuplicateKeyInArray", "POST", answers, `{"action":"approve","comment":[{"a":1,"a":2}]}`, nil, 400, `"comment[0].a" twice`},
		{"KeyOfAnotherCase", "POST", answers, `{"Action":"approve"}`, nil, 400, `unknown field "Action"`},
		{"UnknownKey", "POST", answers, `{"action":"approve","bogus":1}`, nil, 400, `unknown field "bogus"`},
		{"NullField", "POST", answers, `{"action":null}`, nil, 400, `"action" is null`},
		{"NullBody", "POST", answers, `null`, nil, 400, "not null"},
		{"ArrayBody", "POST", answers, `[{"action":"approve"}]`, nil, 400, "not an array"},
		{"StringBody", "POST", answers, `"approve"`, nil, 400, "not a string"},
		{"NumberBody", "POST", answers, `1`, nil, 400, "not a number"},
		{"ObjectThenObject", "POST", answers, `{"action":"approve"} {"action":"cancel"}`, nil, 400, "more after its JSON object"},
		{"ObjectThenGarbage", "POST", answers, `{"action":"approve"} x`, nil, 400, "more after its JSON object"},
		{"BadUTF8", "POST", answers, "{\"action\":\"approve\",\"comment\":\"\xff\"}", nil, 400, "UTF-8"},
		{"LoneHighSurrogate", "POST", answers, `{"action":"edit","reason":"a\ud800b"}`, nil, 400, `surrogate pair (\ud800)`},
		{"LoneLowSurrogate", "POST", tasks, `{"task":"t2","order":"O2","reason":"\udfff"}`, nil, 400, `surrogate pair (\udfff)`},
		{"HighSurrogateBeforeAnotherHigh", "POST", answers, `{"action":"edit","reason":"\uD83D\uD83D"}`, nil, 400, `surrogate pair (\uD83D)`},
		{"SurrogateInAKey", "POST", answers, `{"action":"approve","comment":{"\ud800":1}}`, nil, 400, "surrogate pair"},
		{"EditWithoutReason", "POST", answers, `{"action":"edit"}`, nil, 400, `action edit needs reason, the reason of the new draft version`},
		{"EditWithBlankReason", "POST", answers, `{"action":"edit","reason":"  "}`, nil, 400, `action edit needs reason, the reason of the new draft version (the reason must not be blank)`},
		{"EditReasonWithNUL", "POST", answers, `{"action":"edit","reason":"a\u0000b"}`, nil, 400, `action edit needs reason, the reason of the new draft version (the reason contains control characters)`},
		{"ReviseWithoutComment", "POST", answers, `{"action":"revise"}`, nil, 400, `action revise needs comment, what the owner should change`},
		{"Truncated", "POST", answers, `{"action":`, nil, 400, "ends inside"},
		{"Empty", "POST", answers, ``, nil, 400, "empty"},
		{"StringForANumber", "POST", answers, `{"action":"cancel","version":"1"}`, nil, 400, `field "version" takes a whole number, not a string`},
		{"FractionForANumber", "POST", answers, `{"action":"cancel","version":1.5}`, nil, 400, `field "version" takes a whole number, not 1.5`},
		{"NumberForAString", "POST", answers, `{"action":7}`, nil, 400, `field "action" takes a string, not a number`},
		{"StartWithDuplicateKey", "POST", tasks, `{"task":"t2","order":"O2","task":"t3"}`, nil, 400, `"task" twice`},
		{"TwoIdempotencyKeys", "POST", answers, `{"action":"approve"}`, http.Header{"Idempotency-Key": {"k1", "k2"}}, 400, "2 Idempotency-Key headers"},
		{"EmptyIdempotencyKey", "POST", answers, `{"action":"approve"}`, http.Header{"Idempotency-Key": {""}}, 400, "Idempotency-Key"},
		{"TwoAuthorizationHeaders", "POST", answers, `{"action":"approve"}`, http.Header{"Authorization": {"Bearer " + made.Token, "Bearer " + made.Token}}, 401, "more than one Authorization header"},
		{"QueryOnAPost", "POST", answers + "?action=cancel", `{"action":"approve"}`, nil, 400, `unknown query parameter "action"`},
		{"RepeatedQueryParameter", "GET", tasks + "?limit=1&limit=5", ``, nil, 400, `"limit" is given 2 times`},
		{"MalformedQuery", "GET", tasks + "?status=%zz", ``, nil, 400, "malformed"},
		{"UnknownQueryParameter", "GET", "/api/v1/tasks/t1?wiat=30s", ``, nil, 400, `unknown query parameter "wiat"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+made.Token)
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("%d, body not JSON: %s", rec.Code, rec.Body)
			}
			wantCode := "invalid_input"
			if tc.status == http.StatusUnauthorized {
				wantCode = codeUnauthenticated
			}
			if rec.Code != tc.status || body.Error.Code != wantCode || !strings.Contains(body.Error.Message, tc.says) {
				t.Errorf("%d %s; want %d %s saying %q", rec.Code, rec.Body, tc.status, wantCode, tc.says)
			}
			if strings.Contains(body.Error.Message, "Go ") || strings.Contains(body.Error.Message, "Body.") {
				t.Errorf("%s: the message names the server's Go types", body.Error.Message)
			}
		})
	}
	v, err := svc.Show(ctx, "t1", "alice")
	if err != nil || v.Status != returns.StatusWaiting || len(v.Decisions) != 0 {
		t.Errorf("t1 after the refused requests: %+v, %v; want waiting without a decision", v, err)
	}
	for _, task := range []string{"t2", "t3"} {
		if _, err := svc.Show(ctx, task, "alice"); !errors.Is(returns.Classify(err), returns.ErrNotFound) {
			t.Errorf("%s after the refused start: %v; want not found", task, err)
		}
	}
}

// TestWhatHTTPForbidsNetHTTPRefuses (docs/server.md "Strict requests"): a
// header value with a control character never reaches the server's
// handlers: net/http answers 400 with its plain-text body, and no task
// is made.
func TestWhatHTTPForbidsNetHTTPRefuses(t *testing.T) {
	t.Parallel()
	svc := openService(t, 1)
	ts, made := apiServer(t, svc)
	for name, header := range map[string]string{
		"ControlInKey":   "Idempotency-Key: a\x01b",
		"NewlineInValue": "Idempotency-Key: a\rb",
		"SpaceInName":    "Idempotency Key: k",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"task":"t1","order":"O1","reason":"broken"}`
			fmt.Fprintf(conn, "POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				made.Token, header, len(body), body)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(string(got), "400 Bad Request") {
				t.Errorf("%q: %d %q; want net/http's 400 Bad Request", header, resp.StatusCode, got)
			}
			if _, err := svc.Show(context.Background(), "t1", "alice"); !errors.Is(err, returns.ErrNotFound) {
				t.Errorf("%q: task t1 after the refused request: %v; want none made", header, err)
			}
		})
	}
}

// loneSurrogate finds half a surrogate pair escaped in a string, and
// nothing in a whole pair, in text that only looks like an escape (an
// escaped backslash before "u"), or outside strings.
func TestLoneSurrogateIsFoundInStringsOnly(t *testing.T) {
	for body, want := range map[string]string{
		`{"r":"\ud83d\ude00"}`: "",
		`{"r":"\\ud800"}`:      "",
		`{"r":"\u00e9\u4e2d"}`: "",
		`{"r":"a\"\ud800"}`:    `\ud800`,
		`{"r":"\ud83d"}`:       `\ud83d`,
		`{"r":"\ud83dx"}`:      `\ud83d`,
		`{"r":"\ude00\ud83d"}`: `\ude00`,
		`{"r":"\\\udbff"}`:     `\udbff`,
		`{"r":"ok"} \ud800`:    "",
	} {
		got, found := loneSurrogate([]byte(body))
		if got != want || found != (want != "") {
			t.Errorf("loneSurrogate(%s) = %q, %v; want %q", body, got, found, want)
		}
	}
}
