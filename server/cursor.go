package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"assistant/flow/returns"
)

// A list's cursor (docs/server.md "Pages of the list") is opaque to a
// client: base64url, without padding, of a check (the first 8 bytes of
// the SHA-256 of the rest), then the cursor's version, the created_at
// (RFC 3339, to the nanosecond) and id of the last task of the page
// before, separated by NUL bytes. It names a place in the list's order,
// not an offset, so tasks made since it was given do not move it. The
// check makes an edited or cut-short cursor one that no page gave, even
// when what is left still decodes to a place.
const cursorVersion = "c2"

// cursorCheckLen is the length of a cursor's check, in bytes.
const cursorCheckLen = 8

// encodeCursor is the cursor of the page after the task at p.
func encodeCursor(p returns.ListPosition) string {
	raw := cursorVersion + "\x00" + p.CreatedAt.UTC().Format(time.RFC3339Nano) + "\x00" + p.Task
	sum := sha256.Sum256([]byte(raw))
	return base64.RawURLEncoding.EncodeToString(append(sum[:cursorCheckLen], raw...))
}

// parseCursor is the place a cursor made by encodeCursor names. Errors:
// ErrInvalid for anything encodeCursor does not make.
func parseCursor(c string) (returns.ListPosition, error) {
	bad := func(why string) (returns.ListPosition, error) {
		return returns.ListPosition{}, fmt.Errorf("%w: cursor %q is not one this server gave (%s); use the next_cursor of a page, or leave cursor out for the first page", returns.ErrInvalid, c, why)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil {
		return bad("not base64url")
	}
	if len(b) < cursorCheckLen {
		return bad("cut short")
	}
	raw := b[cursorCheckLen:]
	if sum := sha256.Sum256(raw); !bytes.Equal(sum[:cursorCheckLen], b[:cursorCheckLen]) {
		return bad("its check does not match: edited or cut short")
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) != 3 || parts[0] != cursorVersion {
		return bad("not its form")
	}
	at, err := time.Parse(time.RFC3339Nano, parts[1])
	if err != nil {
		return bad("no time")
	}
	if err := returns.ValidTaskID(parts[2]); err != nil {
		return bad("no task id")
	}
	p := returns.ListPosition{CreatedAt: at, Task: parts[2]}
	if encodeCursor(p) != c {
		return bad("not in its one spelling")
	}
	return p, nil
}
