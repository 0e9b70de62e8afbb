package oracle

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// pollproxyBin is the pollproxy command, built once per test binary for
// the tests that compare its subcommands with Caddy's.
var pollproxyBin struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

func buildPollproxy(t *testing.T) string {
	t.Helper()
	pollproxyBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "pollproxy-oracle-bin")
		if err != nil {
			pollproxyBin.err = err
			return
		}
		pollproxyBin.bin = filepath.Join(dir, "pollproxy")
		cmd := exec.Command("go", "build", "-o", pollproxyBin.bin, "../../cmd/pollproxy")
		pollproxyBin.out, pollproxyBin.err = cmd.CombinedOutput()
	})
	if pollproxyBin.err != nil {
		t.Fatalf("building pollproxy: %v\n%s", pollproxyBin.err, pollproxyBin.out)
	}
	return pollproxyBin.bin
}

// fmtInputs are the Caddyfiles fmt is compared on: every Caddyfile the
// project ships, the documentation examples, the cases, and each of them
// one way disarranged (indentation lost or doubled, braces moved, blank lines and
// comments added) so that formatting has work to do.
func fmtInputs(t *testing.T) map[string]string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := shippedSources(root)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := docExampleSources(root)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{}
	for _, s := range append(append(shipped, docs...), caseSources()...) {
		in[s.name] = s.caddyfile
	}
	n := 0
	for _, s := range append(append(shipped, docs...), caseSources()...) {
		// Each disarrangement of a file, of every other one: the shapes
		// repeat, and every run of Caddy costs a process.
		n++
		mess := disarrangers[n%len(disarrangers)]
		in[s.name+"/"+disarrangerNames[n%len(disarrangers)]] = mess(s.caddyfile)
	}
	// Shapes the formatter treats specially.
	in["special/heredoc"] = "example.com {\nrespond <<EOF\n   keep   this\n  EOF 200\n}\n"
	in["special/comments"] = "# top\n{\n# in global\n    admin off\n}\n\n\n\nexample.com {   # trailing\nrespond hi # there\n}\n"
	in["special/quotes"] = "example.com {\nrespond \"a  {b}\"   `c d`  200\nheader X \"\\\"q\\\"\"\n}\n"
	in["special/env"] = "{$HOST:localhost} {\nrespond {env.X}\n}\n"
	in["special/snippet"] = "(common) {\nheader X y\n}\nexample.com {\nimport common\nrespond hi\n}\n"
	in["special/one-line"] = "example.com { respond hi }\n"
	in["special/crlf"] = "example.com {\r\n\trespond hi\r\n}\r\n"
	in["special/empty"] = ""
	in["special/only-spaces"] = "   \n\n\t\n"
	in["special/no-final-newline"] = "example.com {\n\trespond hi\n}"
	in["special/brace-alone"] = "example.com\n{\n\trespond hi\n}\n"
	in["special/nested"] = "example.com {\nhandle /a* {\nroute {\nheader {\nX y\n}\n}\n}\n}\n"
	in["special/backslash"] = "example.com {\n\trespond \"a\\\nb\"\n}\n"
	return in
}

var disarrangerNames = []string{"flat", "spaces", "blank-lines", "brace-lines"}

var disarrangers = []func(string) string{
	// every line's indentation lost
	func(s string) string {
		return regexp.MustCompile(`(?m)^[ \t]+`).ReplaceAllString(s, "")
	},
	// tabs as spaces, and runs of spaces between words
	func(s string) string {
		s = strings.ReplaceAll(s, "\t", "    ")
		return regexp.MustCompile(`(?m)(\S) (\S)`).ReplaceAllString(s, "$1   $2")
	},
	// blank lines doubled and added after every opening brace
	func(s string) string {
		s = strings.ReplaceAll(s, "\n\n", "\n\n\n\n")
		return strings.ReplaceAll(s, "{\n", "{\n\n")
	},
	// an opening brace on its own line, closing braces followed by comments
	func(s string) string {
		s = regexp.MustCompile(`(?m) \{$`).ReplaceAllString(s, "\n{")
		return regexp.MustCompile(`(?m)^(\s*)\}$`).ReplaceAllString(s, "$1} # end")
	},
}

// fmtRun runs bin fmt with args in dir and returns what it printed, its
// exit status, and the place its "not formatted" error names ("" when
// none).
func fmtRun(t *testing.T, bin, dir string, stdin []byte, args ...string) (string, int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"fmt"}, args...)...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s fmt: %v", bin, err)
	}
	where := ""
	if m := notFormattedRE.FindStringSubmatch(errOut.String()); m != nil {
		where = m[1]
	}
	return out.String(), code, where
}

var notFormattedRE = regexp.MustCompile(`([^\s"]+:\d+): Caddyfile input is not formatted`)

// TestFmt runs caddy fmt and pollproxy fmt on the same files, plainly,
// with --diff, with --overwrite and from stdin, and compares what they
// print, the file they leave, their exit status and the line their "not
// formatted" error names.
func TestFmt(t *testing.T) {
	caddyBin, ppBin := buildCaddy(t), buildPollproxy(t)
	inputs := fmtInputs(t)
	t.Logf("%d Caddyfiles", len(inputs))
	n := 0
	for name, text := range inputs {
		n++
		dir := t.TempDir()
		file := filepath.Join(dir, "Caddyfile")
		modes := [][]string{{"Caddyfile"}}
		if n%3 == 0 {
			modes = append(modes, []string{"--diff", "Caddyfile"})
		}
		if n%5 == 0 {
			modes = append(modes, []string{"-"})
		}
		if n%7 == 0 {
			modes = append(modes, []string{"--overwrite", "Caddyfile"})
		}
		for _, args := range modes {
			var got [2]struct {
				out, where, file string
				code             int
			}
			for i, bin := range []string{caddyBin, ppBin} {
				if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
				got[i].out, got[i].code, got[i].where = fmtRun(t, bin, dir, []byte(text), args...)
				b, _ := os.ReadFile(file)
				got[i].file = string(b)
			}
			if got[0] != got[1] {
				t.Errorf("%s: fmt %s:\ncaddy:     status %d, error at %q\n%s\nfile:\n%s\npollproxy: status %d, error at %q\n%s\nfile:\n%s",
					name, strings.Join(args, " "), got[0].code, got[0].where, got[0].out, got[0].file,
					got[1].code, got[1].where, got[1].out, got[1].file)
			}
		}
	}
}
