package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"assistant/flow/returns"
)

// This file prints the JSON of every command (docs/json.md): objects in
// their fields' order, times in JSONTimeLayout, schema_version first, and
// only the fields --json FIELDS asks for.

// JSONTimeLayout is how every time in the JSON is printed (docs/json.md
// "Times"): RFC 3339 in UTC, to the millisecond, trailing zeros of the
// fraction dropped as time.RFC3339Nano drops them.
const JSONTimeLayout = "2006-01-02T15:04:05.999Z07:00"

// selectingWriter is stdout when --json FIELDS was given: what writeJSON
// prints through it keeps only those fields; any other write passes through.
type selectingWriter struct {
	io.Writer
	sel *jsonSelection
}

// plainWriter is w without a --json selection.
func plainWriter(w io.Writer) io.Writer {
	if s, ok := w.(*selectingWriter); ok {
		return s.Writer
	}
	return w
}

// jsonSelection is what --json FIELDS asks for: the top-level fields of an
// object, or, when list names the key of a command's list (list's "tasks"),
// the fields of each element of that list.
type jsonSelection struct {
	fields []string
	list   string
	// checked is set when the fields were checked against the command's
	// shape before it ran; otherwise writeJSON checks them against what it
	// prints.
	checked bool
}

// writeJSON prints v as indented JSON in the form of docs/json.md: a
// top-level schema_version, null for none, [] and {} for empty lists and
// maps, every field present, times in JSONTimeLayout; with --json FIELDS
// (w is then a selectingWriter) only those fields. An unknown field is
// returns.ErrInvalid naming the available ones.
func writeJSON(w io.Writer, v any) error {
	var sel *jsonSelection
	if s, ok := w.(*selectingWriter); ok {
		w, sel = s.Writer, s.sel
	}
	return encodeJSON(w, v, "  ", sel)
}

// writeJSONLine prints v as writeJSON does, on one line.
func writeJSONLine(w io.Writer, v any) error {
	var sel *jsonSelection
	if s, ok := w.(*selectingWriter); ok {
		w, sel = s.Writer, s.sel
	}
	return encodeJSON(w, v, "", sel)
}

func encodeJSON(w io.Writer, v any, indent string, sel *jsonSelection) error {
	tree, err := toTree(reflect.ValueOf(v))
	if err != nil {
		return err
	}
	if obj, ok := tree.(*object); ok {
		if sel != nil {
			if !sel.checked {
				if err := sel.check(v); err != nil {
					return err
				}
			}
			obj = sel.apply(obj)
		}
		tree = obj.withSchemaVersion()
	}
	return writeIndented(w, tree, indent)
}

// writeIndented prints tree, made by toTree, as JSON indented by indent
// (one line when indent is ""), and a newline.
func writeIndented(w io.Writer, tree any, indent string) error {
	var compact bytes.Buffer
	if err := writeTree(&compact, tree); err != nil {
		return err
	}
	var out bytes.Buffer
	if indent == "" {
		out = compact
	} else if err := json.Indent(&out, compact.Bytes(), "", indent); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// check returns ErrInvalid unless every selected field is one that v (a
// value of the command's output, or a sample of it) has.
func (s *jsonSelection) check(v any) error {
	have, list := jsonFieldsOf(v, s.list)
	for _, f := range s.fields {
		if list != "" && f == "schema_version" {
			continue // printed at the top of every object, may be named beside the elements' fields
		}
		if !slices.Contains(have, f) {
			what := "field"
			if list != "" {
				what = "field of each of " + list
			}
			return fmt.Errorf("%w: --json: unknown %s %q; available: %s", returns.ErrInvalid, what, f, strings.Join(have, ", "))
		}
	}
	return nil
}

// apply keeps the selected fields of obj, in obj's order.
func (s *jsonSelection) apply(obj *object) *object {
	keep := func(o *object) *object {
		out := &object{}
		for i, k := range o.keys {
			if slices.Contains(s.fields, k) {
				out.keys, out.vals = append(out.keys, k), append(out.vals, o.vals[i])
			}
		}
		return out
	}
	if s.list == "" {
		return keep(obj)
	}
	out := &object{}
	for i, k := range obj.keys {
		val := obj.vals[i]
		if items, ok := val.([]any); ok && k == s.list {
			sel := make([]any, len(items))
			for j, it := range items {
				if o, ok := it.(*object); ok {
					sel[j] = keep(o)
				} else {
					sel[j] = it
				}
			}
			val = sel
		}
		out.keys, out.vals = append(out.keys, k), append(out.vals, val)
	}
	return out
}

// jsonFieldsOf lists the JSON fields of v's type: of each element of its
// list key when list is not "" (and v holds that list), else its top-level
// ones, schema_version first, which every object printed has
// (withSchemaVersion). It returns the list key it used.
func jsonFieldsOf(v any, list string) ([]string, string) {
	fields, used := jsonFieldsOfType(v, list)
	if used == "" && !slices.Contains(fields, "schema_version") {
		fields = append([]string{"schema_version"}, fields...)
	}
	return fields, used
}

// jsonFieldsOfType is jsonFieldsOf without the schema_version that
// printing adds.
func jsonFieldsOfType(v any, list string) ([]string, string) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		rv = rv.Elem()
	}
	if list != "" && rv.Kind() == reflect.Map {
		if items := rv.MapIndex(reflect.ValueOf(list)); items.IsValid() {
			t := reflect.TypeOf(items.Interface())
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
				t = t.Elem()
			}
			return fieldNames(t), list
		}
	}
	if rv.Kind() == reflect.Map {
		var keys []string
		for _, k := range rv.MapKeys() {
			keys = append(keys, fmt.Sprint(k.Interface()))
		}
		sort.Strings(keys)
		return keys, ""
	}
	return fieldNames(rv.Type()), ""
}

// fieldNames are the JSON names of struct type t's fields, in order
// (embedded structs' fields in place); nil for any other type.
func fieldNames(t reflect.Type) []string {
	var names []string
	for _, f := range structFields(t) {
		names = append(names, f.name)
	}
	return names
}

type structField struct {
	name  string
	index []int
	// omitEmpty: the field's tag says output:"absent-when-zero", so a
	// zero value is left out (a hint that may be absent) instead of
	// printed as null.
	omitEmpty bool
}

// structFields are the fields encoding/json would print of struct type t.
func structFields(t reflect.Type) []structField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for _, sub := range structFields(f.Type) {
				out = append(out, structField{sub.name, append([]int{i}, sub.index...), sub.omitEmpty})
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, structField{name, []int{i}, f.Tag.Get("output") == "absent-when-zero"})
	}
	return out
}

// object is a JSON object that keeps its keys' order.
type object struct {
	keys []string
	vals []any
}

// withSchemaVersion is o with schema_version first (docs/json.md).
func (o *object) withSchemaVersion() *object {
	if slices.Contains(o.keys, "schema_version") {
		return o
	}
	return &object{keys: append([]string{"schema_version"}, o.keys...), vals: append([]any{json.RawMessage(fmt.Sprint(returns.SchemaVersion))}, o.vals...)}
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// toTree turns v into nil, string, []any, *object or json.RawMessage (a
// number, a bool, or JSON printed as it is), by the rules of writeJSON.
func toTree(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t == timeType:
		tm := v.Interface().(time.Time)
		if tm.IsZero() {
			return nil, nil
		}
		return tm.UTC().Truncate(time.Millisecond).Format(JSONTimeLayout), nil
	case t == rawType:
		raw := v.Bytes()
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil, nil
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, err
		}
		return json.RawMessage(b.Bytes()), nil
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(marshalerType):
		b, err := json.Marshal(v.Interface())
		return json.RawMessage(b), err
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return toTree(v.Elem())
	case reflect.Struct:
		o := &object{}
		for _, f := range structFields(t) {
			fv, err := v.FieldByIndexErr(f.index)
			if err != nil { // a nil embedded pointer: its fields are none
				fv = reflect.Value{}
			}
			if f.omitEmpty && (!fv.IsValid() || fv.IsZero()) {
				continue
			}
			val, err := toTree(fv)
			if err != nil {
				return nil, err
			}
			o.keys, o.vals = append(o.keys, f.name), append(o.vals, val)
		}
		return o, nil
	case reflect.Map:
		o := &object{}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface()) })
		for _, k := range keys {
			val, err := toTree(v.MapIndex(k))
			if err != nil {
				return nil, err
			}
			o.keys, o.vals = append(o.keys, fmt.Sprint(k.Interface())), append(o.vals, val)
		}
		return o, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			b, err := json.Marshal(v.Interface())
			return json.RawMessage(b), err
		}
		items := make([]any, v.Len())
		for i := range items {
			val, err := toTree(v.Index(i))
			if err != nil {
				return nil, err
			}
			items[i] = val
		}
		return items, nil
	case reflect.String:
		if v.String() == "" {
			return nil, nil // none is null, never ""
		}
		return v.String(), nil
	}
	b, err := json.Marshal(v.Interface())
	return json.RawMessage(b), err
}

// writeTree prints a tree made by toTree as compact JSON.
func writeTree(b *bytes.Buffer, tree any) error {
	switch x := tree.(type) {
	case nil:
		b.WriteString("null")
	case string:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	case json.RawMessage:
		b.Write(x)
	case []any:
		b.WriteByte('[')
		for i, it := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeTree(b, it); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeTree(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeTree(b, x.vals[i]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("json output: unexpected %T", tree)
	}
	return nil
}
