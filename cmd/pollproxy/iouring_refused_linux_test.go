package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompExecEnv carries, to TestSeccompExecHelper, the command line to run
// under a seccomp filter that refuses io_uring_setup; with seccompKillEnv
// set the filter kills the process instead (systemd's SystemCallFilter=
// without SystemCallErrorNumber= does).
const (
	seccompExecEnv = "POLLPROXY_TEST_SECCOMP_EXEC"
	seccompKillEnv = "POLLPROXY_TEST_SECCOMP_KILL"
)

// TestSeccompExecHelper is not a test: run by TestIOURingRefused with
// seccompExecEnv set, it makes io_uring_setup fail with EPERM for this
// process and everything it executes, as Docker's default seccomp profile
// does, and replaces itself with the pollproxy command line it was given.
func TestSeccompExecHelper(t *testing.T) {
	spec := os.Getenv(seccompExecEnv)
	if spec == "" {
		return
	}
	var argv []string
	if err := json.Unmarshal([]byte(spec), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", seccompExecEnv, err)
		os.Exit(2)
	}
	refuse := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	if os.Getenv(seccompKillEnv) != "" {
		refuse = unix.SECCOMP_RET_KILL_PROCESS
	}
	// seccomp_data.nr is the first word; this test filter looks at the
	// native system call numbers only.
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: refuse},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "seccomp unavailable: no_new_privs: %v\n", err)
		os.Exit(3)
	}
	// TSYNC: every thread of this Go process, so the one that executes
	// carries the filter whichever it is.
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog))); errno != 0 {
		fmt.Fprintf(os.Stderr, "seccomp unavailable: %v\n", errno)
		os.Exit(3)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, seccompExecEnv+"=") && !strings.HasPrefix(kv, seccompKillEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", argv[0], err)
	os.Exit(2)
}

// TestIOURingRefused refuses io_uring twice, through POLLPROXY_NO_IO_URING
// and through a real seccomp filter on io_uring_setup: pollers lists it as
// unavailable with the reason, auto runs on epoll, and every way of naming
// it (Caddyfile, --poller, POLLPROXY_POLLER) fails at start with the
// reason, never falling back.
func TestIOURingRefused(t *testing.T) {
	bin := pollproxyBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte("{\n\tpoller epoll io_uring\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:1\n}\n"), 0o644)
	for _, c := range []struct {
		name, reason string
		env          []string
	}{
		{"environment", "disabled by POLLPROXY_NO_IO_URING", []string{"POLLPROXY_NO_IO_URING=1"}},
		{"seccomp", "io_uring_setup: operation not permitted", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(env []string, args ...string) (string, string, error) {
				cmd := exec.Command(bin, args...)
				if c.env == nil {
					spec, _ := json.Marshal(append([]string{bin}, args...))
					cmd = exec.Command(os.Args[0], "-test.run=^TestSeccompExecHelper$")
					env = append(env, seccompExecEnv+"="+string(spec))
				}
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "POLLPROXY_") {
						cmd.Env = append(cmd.Env, kv)
					}
				}
				cmd.Env = append(append(cmd.Env, c.env...), env...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 3 {
					t.Skipf("%s", stderr.String())
				}
				return stdout.String(), stderr.String(), err
			}

			out, errOut, err := run(nil, "pollers")
			if err != nil {
				t.Fatalf("pollers: %v\n%s", err, errOut)
			}
			names := strings.Fields(out)
			if len(names) == 0 || names[0] != "epoll" || strings.Contains(out, "io_uring") {
				t.Errorf("pollers printed %q, want epoll first and no io_uring", names)
			}
			if want := "io_uring: unavailable: "; !strings.Contains(errOut, want) || !strings.Contains(errOut, c.reason) {
				t.Errorf("pollers' stderr %q lacks %q with %q", errOut, want, c.reason)
			}
			if out, _, _ := run(nil, "version"); !strings.Contains(out, "auto picks epoll") {
				t.Errorf("version: %q", out)
			}

			for _, try := range []struct {
				env  []string
				args []string
				want string
			}{
				{nil, []string{"validate", "--config", file}, file + `:2: poller: poller backend unavailable "io_uring": ` + c.reason},
				{nil, []string{"run", "--config", file}, file + `:2: poller: poller backend unavailable "io_uring": ` + c.reason},
				{nil, []string{"reverse-proxy", "--poller", "io_uring", "--from", "127.0.0.1:0", "--to", "127.0.0.1:1"}, c.reason},
				{[]string{"POLLPROXY_POLLER=io_uring"}, []string{"reverse-proxy", "--from", "127.0.0.1:0", "--to", "127.0.0.1:1"}, c.reason},
			} {
				out, errOut, err := run(try.env, try.args...)
				if err == nil || !strings.Contains(out+errOut, try.want) {
					t.Errorf("%v %v: %v, want a failure saying %q\n%s%s", try.env, try.args, err, try.want, out, errOut)
				}
			}
		})
	}
}

// TestStartDoesNotProbeIOURing runs pollproxy under a seccomp filter that
// kills the process on io_uring_setup: a start that names another backend
// (or auto, which takes epoll) must not touch io_uring at all.
func TestStartDoesNotProbeIOURing(t *testing.T) {
	bin := pollproxyBinary(t)
	dir := t.TempDir()
	for _, poller := range []string{"epoll", "auto"} {
		file := filepath.Join(dir, poller+".Caddyfile")
		// A start that stops at the last line: lb_retries wants a number.
		os.WriteFile(file, []byte("{\n\tpoller "+poller+"\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:1 {\n\t\tlb_retries lots\n\t}\n}\n"), 0o644)
		spec, _ := json.Marshal([]string{bin, "run", "--config", file})
		cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompExecHelper$")
		cmd.Env = append(os.Environ(), seccompExecEnv+"="+string(spec), seccompKillEnv+"=1")
		out, err := cmd.CombinedOutput()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 3 {
			t.Skipf("%s", out)
		}
		if want := file + ":6: reverse_proxy: lb_retries"; !strings.Contains(string(out), want) {
			t.Errorf("poller %s under a filter that kills io_uring_setup: %v, want the error %q\n%s", poller, err, want, out)
		}
	}
}
