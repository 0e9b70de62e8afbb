package proxy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// onLoopForbidden are the packages the root package must not import: it is
// the per-loop data path, where nothing locks, waits or spawns (the
// design's first non-negotiable). What runs on goroutines of its own lives
// in proxy/upstream; routing built off the loops in proxy/route.
var onLoopForbidden = map[string]string{
	"sync":        "locks belong off the loop (proxy/upstream)",
	"sync/atomic": "state shared between loops belongs in proxy/upstream",
	"context":     "cancellation is for goroutines, which run in proxy/upstream",
	"net/http":    "net/http's client and server block and spawn; the loop speaks HTTP/1.1 through proxy/h1",
}

// TestRootRunsOnTheLoop reads every non-test Go file of the root package,
// for every operating system (build constraints are not applied), and
// fails if one imports a package that locks or spawns, or starts a
// goroutine.
func TestRootRunsOnTheLoop(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	read := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := onLoopForbidden[path]; bad {
				t.Errorf("%s imports %s: %s", fset.Position(imp.Pos()), path, why)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s starts a goroutine: the root package runs on the loop", fset.Position(g.Pos()))
			}
			return true
		})
	}
	if read == 0 {
		t.Fatal("no Go file read: the test runs in the wrong directory")
	}
}

// routeForbidden are the packages proxy/route must not reach, directly or
// through another package of this module: route is the compiled,
// read-only vocabulary of routing, and the work a route ends in (password
// checks, encoders, files, access logs) runs in proxy/site.
var routeForbidden = map[string]string{
	module + "/proxy/auth":       "basic_auth's checks run in proxy/site",
	module + "/proxy/encode":     "encoders wrap a response in proxy/site",
	module + "/proxy/fileserver": "the disk is asked from proxy/site",
	module + "/proxy/observe":    "answers are logged from proxy/site",
}

const module = "github.com/pollproxy/pollproxy"

// TestRouteImportsNoWork follows proxy/route's imports through every
// package of this module it reaches, for every operating system, and
// fails if one of them is a package that does a route's work.
func TestRouteImportsNoWork(t *testing.T) {
	seen := map[string]bool{}
	var visit func(pkg string, via []string)
	visit = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		for _, imp := range packageImports(t, "."+strings.TrimPrefix(pkg, module+"/proxy")) {
			chain := append(via[:len(via):len(via)], imp)
			if why, bad := routeForbidden[imp]; bad {
				t.Errorf("%s: %s", strings.Join(chain, " -> "), why)
			}
			if strings.HasPrefix(imp, module+"/proxy/") {
				visit(imp, chain)
			}
		}
	}
	visit(module+"/proxy/route", []string{module + "/proxy/route"})
}

// packageImports returns what the non-test Go files in dir import.
func packageImports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var imps []string
	read := 0
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, dir+"/"+name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			imps = append(imps, path)
		}
	}
	if read == 0 {
		t.Fatalf("%s: no Go file read: the test runs in the wrong directory", dir)
	}
	return imps
}
