package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateStorage: validate accepts storage redis and reports a bad
// storage block with its file:line, without connecting anywhere.
func TestValidateStorage(t *testing.T) {
	bin := pollproxyBinary(t)
	file := filepath.Join(t.TempDir(), "Caddyfile")
	site := "localhost:8443 {\n\treverse_proxy 127.0.0.1:1\n}\n"
	os.WriteFile(file, []byte("{\n\tstorage redis {\n\t\taddress 127.0.0.1:1\n\t\tkey_prefix edge\n\t}\n}\n"+site), 0o644)
	out, err := exec.Command(bin, "validate", "--config", file).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "OK: ") {
		t.Fatalf("validate storage redis: %v\n%s", err, out)
	}
	os.WriteFile(file, []byte("{\n\tstorage redis {\n\t\taddress 127.0.0.1:1\n\t\tcompression true\n\t}\n}\n"+site), 0o644)
	out, err = exec.Command(bin, "validate", "--config", file).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("validate of a bad storage block: %v\n%s", err, out)
	}
	if want := file + ":4: storage: redis: compression is not supported by pollproxy"; !strings.Contains(string(out), want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}
