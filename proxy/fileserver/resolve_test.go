package fileserver

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClean: request paths as the root sees them.
func TestClean(t *testing.T) {
	for _, c := range []struct {
		in  string
		rel string
		dir bool
		bad bool
	}{
		{"/", "", false, false},
		{"/a/b.txt", "a/b.txt", false, false},
		{"/a/", "a", true, false},
		{"/../../etc/passwd", "etc/passwd", false, false},
		{"/%2e%2e/%2E%2E/etc/passwd", "etc/passwd", false, false},
		{"/a/..%2f..%2f..%2fetc", "etc", false, false},
		{"//a//b/./c", "a/b/c", false, false},
		{"/a%00b", "", false, true},
		{"/..%5c..%5cetc", "", false, true},
		{"/a\\b", "", false, true},
		{"/%zz", "", false, true},
	} {
		rel, dir, err := Clean(c.in)
		if (err != nil) != c.bad || (!c.bad && (rel != c.rel || dir != c.dir)) {
			t.Errorf("%q: %q %v %v, want %q %v bad=%v", c.in, rel, dir, err, c.rel, c.dir, c.bad)
		}
	}
}

// TestHidden: Caddy's hide rules.
func TestHidden(t *testing.T) {
	h := Hide{".git", "*.bak", "/srv/secret", "/srv/*.key"}
	for name, want := range map[string]bool{
		"/srv/.git/config": true, "/srv/a.bak": true, "/srv/secret": true, "/srv/secret/x": true,
		"/srv/secretary": false, "/srv/tls.key": true, "/srv/index.html": false, "/srv/gitx": false,
	} {
		if got := h.hidden(name); got != want {
			t.Errorf("%s: hidden %v, want %v", name, got, want)
		}
	}
}

// escapeTree makes a root with a file, a link inside it, links out of
// it (relative and absolute) and a secret beside it.
func escapeTree(t testing.TB) (root string) {
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "secret"), []byte("secret"), 0o644))
	must(os.WriteFile(filepath.Join(root, "sub", "in.txt"), []byte("inside"), 0o644))
	must(os.Symlink("sub/in.txt", filepath.Join(root, "inlink")))
	must(os.Symlink("../secret", filepath.Join(root, "out")))
	must(os.Symlink("../../secret", filepath.Join(root, "sub", "out2")))
	must(os.Symlink(filepath.Join(dir, "secret"), filepath.Join(root, "abs")))
	must(os.Symlink("..", filepath.Join(root, "up")))
	return root
}

// TestOpenBeneath: links inside the root are followed, links out of it
// are refused, on openat2 and on the portable way.
func TestOpenBeneath(t *testing.T) {
	root := escapeTree(t)
	for _, open := range []struct {
		name string
		f    func(root, rel string) (*os.File, error)
	}{{"openBeneath", openBeneath}, {"openChecked", openChecked}} {
		for rel, want := range map[string]string{"sub/in.txt": "inside", "inlink": "inside", "out": "", "sub/out2": "",
			"abs": "", "up/secret": ""} {
			f, err := open.f(root, rel)
			if want == "" {
				if err == nil {
					f.Close()
					t.Errorf("%s %s: opened", open.name, rel)
				} else if !errors.Is(err, errEscape) && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s %s: %v", open.name, rel, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", open.name, rel, err)
				continue
			}
			b := make([]byte, 64)
			n, _ := f.Read(b)
			f.Close()
			if string(b[:n]) != want {
				t.Errorf("%s %s: read %q", open.name, rel, b[:n])
			}
		}
	}
}

// FuzzResolve: whatever the request path, what is opened is under the
// root, and the secret beside it is never read.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"/", "/../secret", "/%2e%2e/secret", "/out", "/sub/out2", "/up/secret",
		"/abs", "/inlink", "/sub/../../secret", "/..%2fsecret", "/%2E%2E%2Fsecret", "/sub/%2e%2e/%2e%2e/secret"} {
		f.Add(s)
	}
	root := escapeTree(f)
	realRoot, _ := filepath.EvalSymlinks(root)
	f.Fuzz(func(t *testing.T, p string) {
		rel, _, err := Clean(p)
		if err != nil {
			return
		}
		if strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/../") {
			t.Fatalf("%q cleaned to %q", p, rel)
		}
		for _, open := range []func(root, rel string) (*os.File, error){openBeneath, openChecked} {
			fh, err := open(root, rel)
			if err != nil {
				continue
			}
			info, _ := fh.Stat()
			b := make([]byte, 16)
			n, _ := fh.Read(b)
			fh.Close()
			if string(b[:n]) == "secret" {
				t.Fatalf("%q read the file outside the root", p)
			}
			if info != nil && !info.IsDir() {
				continue
			}
			if real, err := filepath.EvalSymlinks(filepath.Join(root, rel)); err == nil &&
				real != realRoot && !strings.HasPrefix(real, realRoot+"/") {
				t.Fatalf("%q opened the directory %s outside the root", p, real)
			}
		}
	})
}
