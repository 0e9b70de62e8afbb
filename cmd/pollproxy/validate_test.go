package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildOut  []byte
)

// pollproxyBinary builds the command once per test run.
func pollproxyBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pollproxy-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "pollproxy")
		args := []string{"build", "-o", buildPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, ".")...)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestValidateExample(t *testing.T) {
	bin := pollproxyBinary(t)
	out, err := exec.Command(bin, "validate", "--config", filepath.Join(repoRoot(t), "Caddyfile.example")).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "OK: ") {
		t.Fatalf("validate Caddyfile.example: %v\n%s", err, out)
	}
}

func TestValidateErrors(t *testing.T) {
	bin := pollproxyBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte("{\n\tpoller fastpoll\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:1 {\n\t\tlb_policy fastest\n\t}\n\ttls "+
		filepath.Join(dir, "missing.pem")+" "+filepath.Join(dir, "missing.key")+"\n}\n"), 0o644)
	cmd := exec.Command(bin, "validate", "--config", file)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("validate of a bad file: %v\n%s", err, out)
	}
	for _, want := range []string{
		file + `:2: poller: unknown backend "fastpoll"`,
		file + `:6: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, least_conn, first, random`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Certificate files are checked once the file parses.
	os.WriteFile(file, []byte("localhost:8443 {\n\treverse_proxy 127.0.0.1:1\n\ttls "+
		filepath.Join(dir, "missing.pem")+" "+filepath.Join(dir, "missing.key")+"\n}\n"), 0o644)
	out, err = exec.Command(bin, "validate", "--config", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), file+":3: tls: reading certificate") {
		t.Errorf("missing certificate: %v\n%s", err, out)
	}
}
