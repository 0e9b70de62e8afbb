package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// The unit's paths as installed; the tests put the built binary and a
// temporary Caddyfile in their place.
const (
	unitBinary    = "/usr/local/bin/pollproxy"
	unitCaddyfile = "/etc/pollproxy/Caddyfile"
)

// unitService returns the [Service] assignments of dist/pollproxy.service,
// key to values in file order.
func unitService(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "dist", "pollproxy.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#':
		case line[0] == '[':
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			out[k] = append(out[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// one returns the single value of key.
func one(t *testing.T, svc map[string][]string, key string) string {
	t.Helper()
	if len(svc[key]) != 1 {
		t.Fatalf("%s: %q, want one value", key, svc[key])
	}
	return svc[key][0]
}

// TestServiceUnitVerify runs systemd-analyze verify on the unit, with
// ExecStart's binary replaced by the built one (verify checks that it
// exists and is executable). verify exits 0 even on an unknown key or a
// value it cannot parse, only printing a warning, so any output fails the
// test; a broken copy shows that such warnings do appear. verify does not
// look User= up; TestServiceUser checks the user the unit names.
func TestServiceUnitVerify(t *testing.T) {
	analyze := testenv.Tool(t, "systemd-analyze", "systemd")
	unit, err := os.ReadFile(filepath.Join(repoRoot(t), "dist", "pollproxy.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart="+unitBinary+" ") {
		t.Fatalf("ExecStart does not run %s", unitBinary)
	}
	verify := func(text string) (string, error) {
		file := filepath.Join(t.TempDir(), "pollproxy.service")
		text = strings.ReplaceAll(text, "ExecStart="+unitBinary+" ", "ExecStart="+pollproxyBinary(t)+" ")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", "--man=no", file).CombinedOutput()
		return string(out), err
	}
	if out, err := verify(string(unit)); err != nil || out != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	broken := strings.Replace(string(unit), "ProtectSystem=full", "ProtectSystem=fullest\nProtectSystems=full", 1)
	if out, _ := verify(broken); !strings.Contains(out, "ProtectSystem") || !strings.Contains(out, "ProtectSystems") {
		t.Errorf("systemd-analyze verify printed nothing for a bad value and an unknown key: %q", out)
	}
}

// TestServiceUser: the unit runs as the user that dist/pollproxy.sysusers
// creates; systemd-sysusers, run on a scratch root, creates it as a system
// account without a login shell.
func TestServiceUser(t *testing.T) {
	svc := unitService(t)
	user, group := one(t, svc, "User"), one(t, svc, "Group")
	sysusers := testenv.Tool(t, "systemd-sysusers", "systemd")
	root := t.TempDir()
	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "dist", "pollproxy.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "etc", "sysusers.d"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "sysusers.d", "pollproxy.conf"), conf, 0o644)
	if out, err := exec.Command(sysusers, "--root", root).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	groups, _ := os.ReadFile(filepath.Join(root, "etc", "group"))
	var found bool
	for _, line := range strings.Split(string(passwd), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[0] == user {
			found = true
			if uid, err := strconv.Atoi(f[2]); err != nil || uid == 0 || uid >= 1000 {
				t.Errorf("%s has uid %s, want a system uid", user, f[2])
			}
			if !strings.HasSuffix(f[6], "nologin") {
				t.Errorf("%s has shell %s", user, f[6])
			}
		}
	}
	if !found || !strings.Contains("\n"+string(groups), "\n"+group+":") {
		t.Errorf("sysusers made no user %s and group %s:\n%s\n%s", user, group, passwd, groups)
	}
}

// TestServiceUnitCommands does what systemd does with the unit, short of
// the sandbox: ExecStart with the unit's Environment (%S being the state
// directory root), notifications on $NOTIFY_SOCKET, ExecReload with
// $MAINPID, then SIGTERM (KillSignal's default). A Caddyfile without a
// storage line keeps its local CA in the StateDirectory.
func TestServiceUnitCommands(t *testing.T) {
	svc := unitService(t)
	if one(t, svc, "Type") != "notify" {
		t.Fatalf("Type=%s", one(t, svc, "Type"))
	}
	if len(svc["KillSignal"]) != 0 {
		t.Fatalf("KillSignal=%s: the test sends SIGTERM", svc["KillSignal"])
	}
	start := strings.Fields(one(t, svc, "ExecStart"))
	if start[0] != unitBinary {
		t.Fatalf("ExecStart runs %s", start[0])
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		stateRoot := filepath.Join(dir, "var-lib")
		stateDir := filepath.Join(stateRoot, one(t, svc, "StateDirectory"))
		os.MkdirAll(stateDir, 0o700) // systemd creates it
		env := []string{"POLLPROXY_POLLER=" + backend}
		for _, e := range svc["Environment"] {
			env = append(env, strings.ReplaceAll(e, "%S", stateRoot))
		}
		file := filepath.Join(dir, "Caddyfile")
		port := servertest.FreePort(t)
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\trespond \"ok\"\n}\n", port)), 0o644)
		var args []string
		for _, a := range start[1:] {
			args = append(args, strings.ReplaceAll(a, unitCaddyfile, file))
		}

		sock := listenNotify(t)
		p := startProc(t, "pollproxy running", append(env, "NOTIFY_SOCKET="+sock.name), args...)
		pid := p.cmd.Process.Pid
		sock.want("READY=1", pid)
		if _, err := os.Stat(filepath.Join(stateDir, "pollproxy", "ca", "local", "root.crt")); err != nil {
			t.Errorf("no local CA in the state directory: %v", err)
		}

		reload := strings.Fields(strings.ReplaceAll(one(t, svc, "ExecReload"), "$MAINPID", strconv.Itoa(pid)))
		if out, err := exec.Command(reload[0], reload[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("ExecReload: %v\n%s", err, out)
		}
		if got, from := sock.next(); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") || from != pid {
			t.Fatalf("after ExecReload: %q from %d", got, from)
		}
		sock.want("READY=1\nSTATUS=configuration reloaded", pid)
		p.stop(syscall.SIGTERM)
		sock.want("STOPPING=1", pid)
	})
}
