package returns

import "strconv"

// SchemaVersion is the version of the JSON every command prints, its
// top-level "schema_version" (docs/json.md). It goes up when a field is
// renamed, removed or changes its meaning; new fields do not change it.
const SchemaVersion = 1

// Schema is a field that takes no room and prints as SchemaVersion, so a
// View carries its schema_version however it was built. Decoding accepts
// any value and keeps nothing.
type Schema struct{}

// MarshalJSON prints SchemaVersion.
func (Schema) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(SchemaVersion)), nil }

// UnmarshalJSON accepts any schema_version: the field holds nothing.
func (*Schema) UnmarshalJSON([]byte) error { return nil }
