// Package testkit holds the helpers that the tests of several packages
// share: the hash of a file (to show a refused file is unchanged) and
// running part of a test in a child process (to test what only separate
// processes show: locks, SIGKILL, two writers). Only tests import it.
package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"testing"
)

// FileSHA256 returns the hex SHA-256 of the file at path, or "" when it
// does not exist; any other read error fails the test.
func FileSHA256(tb testing.TB, path string) string {
	tb.Helper()
	sum, err := FileSum(path)
	if err != nil {
		tb.Fatalf("hash %s: %v", path, err)
	}
	return sum
}

// FileSum is FileSHA256 for callers without a testing.TB (a testscript
// command): the hex SHA-256 of the file at path, "" when it does not exist.
func FileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// HelperEnv names the environment variable that tells a child process of
// a test which part to run (Child sets it).
const HelperEnv = "ASSISTANT_TEST_HELPER"

// HelperPart returns the part this process runs as a child of a test, or
// "" in a normal test run. A package's TestHelperProcess skips on "" and
// dispatches on the rest.
func HelperPart() string { return os.Getenv(HelperEnv) }

// Child returns a command that runs the test binary again as a child that
// runs only TestHelperProcess, with HelperEnv set to part and env
// (KEY=value) added to this process's environment. Its stderr is the
// test's; the caller sets stdin and stdout as it needs.
func Child(tb testing.TB, part string, env ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{HelperEnv + "=" + part}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}
