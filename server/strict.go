package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"assistant/flow/returns"
)

// Strict requests (docs/server.md "Strict requests"): a request means one
// thing or is refused. encoding/json takes the last of two equal keys,
// matches keys without regard to case, takes null for an object and
// replaces bad UTF-8; net/http and net/url take the first of repeated
// headers and parameters and drop a malformed pair. Each of those would
// let one request be read two ways (by a proxy that logs it, by the
// server that acts on it), so each is refused here before anything is
// done.

// decode reads r's body, at most MaxBody bytes, into dst, a pointer to a
// struct whose fields carry json tags, by decodeStrict's rules. Errors:
// ErrInvalid (400), or *http.MaxBytesError (413).
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return fmt.Errorf("%w: the request body could not be read: %v", returns.ErrInvalid, err)
	}
	return decodeStrict(body, dst)
}

// decodeStrict decodes body into dst, a pointer to a struct, when body is
// valid UTF-8, escapes no lone surrogate (encoding/json would read one as
// U+FFFD, a character the sender did not send), holds exactly one JSON
// object and nothing after it, whose
// keys are each one of dst's json names spelled exactly, none twice (in
// nested values neither), and whose values are not null (a field without
// a value is left out). Errors: ErrInvalid saying what is wrong.
func decodeStrict(body []byte, dst any) error {
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: the request body is not valid UTF-8", returns.ErrInvalid)
	}
	if esc, ok := loneSurrogate(body); ok {
		return fmt.Errorf("%w: the request body escapes half a UTF-16 surrogate pair (%s), which is no character", returns.ErrInvalid, esc)
	}
	fields := jsonNames(dst)
	if err := checkObject(body, fields); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: the request body is not the JSON object this route takes: %s", returns.ErrInvalid, decodeWords(err))
	}
	return nil
}

// loneSurrogate finds the first \u escape in a JSON string of body that
// is half a UTF-16 surrogate pair without its other half (a high one not
// followed by a low one, or a low one alone) and returns it as written.
// Only strings are read: outside them a backslash is not JSON, which the
// decoding refuses.
func loneSurrogate(body []byte) (string, bool) {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	inString := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			r, ok := hex4(i)
			if !ok {
				i++ // the escaped character, whatever it is
				continue
			}
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00:
				if low, ok := hex4(i + 6); ok && low >= 0xdc00 && low <= 0xdfff {
					i += 11
					continue
				}
				return string(body[i : i+6]), true
			case utf16.IsSurrogate(r):
				return string(body[i : i+6]), true
			}
			i += 5
		}
	}
	return "", false
}

// decodeWords is a decoding error of encoding/json in the API's words:
// for a value of the wrong type, the field by its JSON name and the type
// it takes ("field \"version\" takes a number, not a string"), never
// the Go names of the server's own types.
func decodeWords(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	want := "a string"
	switch te.Type.Kind() {
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Map, reflect.Struct:
		want = "an object"
	}
	got := te.Value
	switch kind, value, _ := strings.Cut(te.Value, " "); kind {
	case "string":
		got = "a string"
	case "bool":
		got = "a boolean"
	case "array":
		got = "a list"
	case "object":
		got = "an object"
	case "number":
		got = "a number"
		if value != "" {
			got = value
		}
	}
	if te.Field == "" {
		return fmt.Sprintf("the body takes %s, not %s", want, got)
	}
	return fmt.Sprintf("field %q takes %s, not %s", te.Field, want, got)
}

// checkObject walks body's JSON tokens: one object, its keys among
// fields exactly and none null-valued, no key twice in any object at any
// depth, nothing after it. Errors: ErrInvalid.
func checkObject(body []byte, fields []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the request body is empty; it must be one JSON object", returns.ErrInvalid)
	}
	if err != nil {
		return notJSON(err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%w: the request body must be one JSON object, not %s", returns.ErrInvalid, kindOfToken(tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := objectKey(dec, seen, "")
		if err != nil {
			return err
		}
		if !slices.Contains(fields, key) {
			return fmt.Errorf("%w: unknown field %q in the request body; this route takes %s (spelled so)", returns.ErrInvalid, key, strings.Join(fields, ", "))
		}
		tok, err := dec.Token()
		if err != nil {
			return notJSON(err)
		}
		if tok == nil {
			return fmt.Errorf("%w: field %q is null; leave a field out to give no value", returns.ErrInvalid, key)
		}
		if err := skipValue(dec, tok, key); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return notJSON(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the request body holds more after its JSON object; it must be one JSON object alone", returns.ErrInvalid)
	}
	return nil
}

// objectKey reads the next key of an object whose keys so far are seen,
// at path (the keys leading to the object, "" at the top). Errors:
// ErrInvalid for bad JSON or a key seen before.
func objectKey(dec *json.Decoder, seen map[string]bool, path string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", notJSON(err)
	}
	key, _ := tok.(string) // Token returns object keys as strings
	if seen[key] {
		return "", fmt.Errorf("%w: the request body gives %q twice; give each field once", returns.ErrInvalid, path+key)
	}
	seen[key] = true
	return key, nil
}

// skipValue reads the rest of the value that began with tok, at path:
// nested objects' keys must not repeat. Errors: ErrInvalid.
func skipValue(dec *json.Decoder, tok json.Token, path string) error {
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			key, err := objectKey(dec, seen, path+".")
			if err != nil {
				return err
			}
			next, err := dec.Token()
			if err != nil {
				return notJSON(err)
			}
			if err := skipValue(dec, next, path+"."+key); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			next, err := dec.Token()
			if err != nil {
				return notJSON(err)
			}
			if err := skipValue(dec, next, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return notJSON(err)
	}
	return nil
}

// notJSON is the ErrInvalid of a body that is not JSON, naming the byte
// where it went wrong when the decoder says.
func notJSON(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("%w: the request body is not valid JSON at byte %d: %v", returns.ErrInvalid, syntax.Offset, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the request body ends inside its JSON object", returns.ErrInvalid)
	}
	return fmt.Errorf("%w: the request body is not valid JSON: %v", returns.ErrInvalid, err)
}

// kindOfToken names the JSON value a token begins, for a message.
func kindOfToken(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	}
	if tok == json.Delim('[') {
		return "an array"
	}
	return fmt.Sprint(tok)
}

// jsonNames are the json names of the fields of the struct dst points
// to, in their order.
func jsonNames(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// oneHeader is the value of the request header name and whether it was
// given; a header given more than once is ErrInvalid.
func oneHeader(r *http.Request, name string) (string, bool, error) {
	vs := r.Header.Values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", true, fmt.Errorf("%w: the request carries %d %s headers; send it once", returns.ErrInvalid, len(vs), name)
}

// params names the query parameters a route takes: single ones at most
// once, multi ones (a list, "status=a&status=b") as often as given.
type params struct {
	single, multi []string
}

// check parses r's query: malformed, unknown or (but for p.multi)
// repeated parameters are ErrInvalid naming what the route takes.
func (p params) check(r *http.Request) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("%w: the query string is malformed: %v", returns.ErrInvalid, err)
	}
	takes := "takes no query parameters"
	if all := append(slices.Clone(p.single), p.multi...); len(all) > 0 {
		takes = "takes " + strings.Join(all, ", ")
	}
	for k, vs := range q {
		switch {
		case slices.Contains(p.multi, k):
		case !slices.Contains(p.single, k):
			return fmt.Errorf("%w: unknown query parameter %q; this route %s", returns.ErrInvalid, k, takes)
		case len(vs) > 1:
			return fmt.Errorf("%w: query parameter %q is given %d times; give it once", returns.ErrInvalid, k, len(vs))
		}
	}
	return nil
}

// strictQuery wraps a signed-in route: a query string p refuses
// (params.check) is 400 before h runs.
func (s *Server) strictQuery(p params, h func(w http.ResponseWriter, r *http.Request, user string)) func(w http.ResponseWriter, r *http.Request, user string) {
	return func(w http.ResponseWriter, r *http.Request, user string) {
		if err := p.check(r); err != nil {
			s.fail(w, err)
			return
		}
		h(w, r, user)
	}
}

// oneForm reads r's form as a page's POST must send it: fields in the body
// only (the address carries no query), each field once. It returns the
// body's fields; the error says, in a person's words, what was not so.
// A request means one thing or is refused, as the API's JSON bodies are
// (decodeStrict).
func oneForm(r *http.Request) (url.Values, error) {
	if err := r.ParseForm(); err != nil {
		return nil, fmt.Errorf("the form could not be read: %v", err)
	}
	if r.URL.RawQuery != "" {
		return nil, errors.New("the form was sent to an address with a query; a form gives its fields in its body only")
	}
	keys := make([]string, 0, len(r.PostForm))
	for k := range r.PostForm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(r.PostForm[k]) > 1 {
			return nil, fmt.Errorf("the form gives %q %d times; a form gives each field once", k, len(r.PostForm[k]))
		}
	}
	return r.PostForm, nil
}
