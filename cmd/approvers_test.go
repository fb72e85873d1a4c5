package cmd

import "testing"

// approvers list --output text prints the grants in force and every
// recorded change of them, as its JSON carries them: the text leaves no
// change out.
func TestApproversListText(t *testing.T) {
	c := newCLI(t)
	c.mustRun(startR1...)
	c.mustRun("approvers", "grant", "alice")
	c.mustRun("approvers", "grant", "bob")
	c.mustRun("approvers", "revoke", "bob")
	c.mustRun("--user", "carol", "approvers", "grant", "demo-user")
	checkGolden(t, "approvers_list_text", c.mask(c.mustRun("approvers", "list", "--output", "text").stdout))
	checkGolden(t, "approvers_list_nothing_text", c.mask(c.mustRun("--user", "dave", "approvers", "list", "--output", "text").stdout))
}
