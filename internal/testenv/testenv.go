package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Require is the environment variable that turns a missing program into a
// test failure. scripts/test sets it.
const Require = "POLLPROXY_TEST_REQUIRE_TOOLS"

// Required reports whether missing programs fail tests here.
func Required() bool { return os.Getenv(Require) != "" }

// Tool returns the path of the program name, which Debian's package pkg
// installs. Without it, t skips, or fails when Required.
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	Missing(t, name+" is not installed (Debian package "+pkg+")")
	return ""
}

// Missing ends t for a reason outside the code under test (a program or
// module it needs is not here): a skip, or a failure when Required.
func Missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s; %s is set, so this test may not skip", why, Require)
	}
	t.Skip(why)
}
