package returns

// Fingerprint is the fingerprint Start records for a request, for tests
// (package returns_test) that write a task record the way Start would.
func Fingerprint(user, order, reason string) string {
	return fingerprint(StartOptions{User: user, Order: order, Reason: reason})
}
