package checkpoints

import "assistant/flow"

// The rules every store keeps (see the package documentation), for stores
// in other packages (checkpoints/postgres), so that all of them refuse and
// encode alike.

// ValidateCheckpoint returns an error when a store could not give cp back
// unchanged: nil, no thread or id, its own parent, Values or a
// Metadata.Writes value that is not JSON. It does not check CreatedAt,
// whose range is the store's.
func ValidateCheckpoint(cp *flow.Checkpoint) error { return validateCheckpoint(cp) }

// ValidateWrites returns an error when the thread or checkpoint id is
// empty or a write's Value is not nil or JSON.
func ValidateWrites(threadID, checkpointID string, writes []flow.Write) error {
	return validateWrites(threadID, checkpointID, writes)
}

// EncodeMetadata returns the JSON text that holds m's Writes and Waiting
// (Source and Step have columns of their own), "" when both are empty,
// keeping every byte of each Writes value. Call ValidateCheckpoint first.
// Decoding is json.Unmarshal into the Metadata.
func EncodeMetadata(m flow.Metadata) (string, error) { return encodeMetadata(m) }
