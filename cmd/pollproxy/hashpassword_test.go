package main

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pollproxy/pollproxy/proxy/auth"
)

// TestHashPassword: the command prints a bcrypt hash of the password,
// from --plaintext or from a line of stdin, that bcrypt verifies and
// basic_auth reads, at the cost asked for.
func TestHashPassword(t *testing.T) {
	bin := pollproxyBinary(t)
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"flag", []string{"hash-password", "--plaintext", "s3cret", "--bcrypt-cost", "4"}, ""},
		{"short flags", []string{"hash-password", "-p", "s3cret", "-a", "bcrypt", "--bcrypt-cost", "5"}, ""},
		{"stdin", []string{"hash-password", "--bcrypt-cost", "4"}, "s3cret\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Stdin = strings.NewReader(c.stdin)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %v", c.args, err)
			}
			hash := strings.TrimSuffix(string(out), "\n")
			if !strings.HasPrefix(hash, "$2a$0") {
				t.Fatalf("printed %q, want a bcrypt hash in Modular Crypt Format", hash)
			}
			if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret")); err != nil {
				t.Errorf("bcrypt does not verify %q: %v", hash, err)
			}
			if _, err := auth.ParseHash(hash); err != nil {
				t.Errorf("basic_auth does not read %q: %v", hash, err)
			}
		})
	}
	for _, args := range [][]string{
		{"hash-password", "--algorithm", "argon2id", "-p", "x"},
		{"hash-password", "--algorithm", "md5", "-p", "x"},
	} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err == nil {
			t.Errorf("%v: succeeded with %q, want an error", args, out)
		}
	}
	cmd := exec.Command(bin, "hash-password")
	cmd.Stdin = strings.NewReader("\n")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "plaintext is required") {
		t.Errorf("an empty password: %v %q, want plaintext is required", err, out)
	}
}
