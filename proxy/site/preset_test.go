package site

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// editNode is a header directive of ops (each a Caddyfile line's
// arguments), immediate or deferred.
func editNode(t *testing.T, immediate bool, lines ...[]string) Node {
	t.Helper()
	d := &EditResponse{Immediate: immediate}
	for _, args := range lines {
		op, err := route.ParseHeaderOp(args, true)
		if err != nil {
			t.Fatal(err)
		}
		d.Ops = append(d.Ops, op)
	}
	return Node{Do: d}
}

// TestResponseEditOrder: the order Caddy's header directives reach a
// respond's head in: immediate ones as the routes run, then the deferred
// ones from the last to the first (their writers nest), each one's
// ?Field defaults before its other edits.
func TestResponseEditOrder(t *testing.T) {
	line := func(args ...string) []string { return args }
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string // x's values
	}{
		{"deferred: the first wins", []Node{
			editNode(t, false, line(">X", "first")), editNode(t, false, line(">X", "second"))}, []string{"first"}},
		{"immediate: the last wins", []Node{
			editNode(t, true, line("X", "first")), editNode(t, true, line("X", "second"))}, []string{"second"}},
		{"deferred delete after immediate set", []Node{
			editNode(t, true, line("X", "a")), editNode(t, false, line("-X"))}, nil},
		{"deferred delete before immediate set", []Node{
			editNode(t, false, line("-X")), editNode(t, true, line("X", "a"))}, nil},
		{"immediate add joins", []Node{
			editNode(t, true, line("X", "a")), editNode(t, true, line("+X", "b"))}, []string{"a", "b"}},
		{"default before the directive's delete", []Node{
			editNode(t, false, line("-X"), line("?X", "d"))}, nil},
		{"default after an immediate set", []Node{
			editNode(t, true, line("X", "a")), editNode(t, true, line("?X", "d"))}, []string{"a"}},
		{"default alone", []Node{editNode(t, true, line("?X", "d"))}, []string{"d"}},
		{"immediate replace sees what was set", []Node{
			editNode(t, true, line("X", "abc")), editNode(t, true, line("X", "b", "B"))}, []string{"aBc"}},
	} {
		nodes := append(tc.nodes, Node{Do: &Respond{Status: 200, Static: Responder(200, "hi")}})
		h := NewHandler(&Table{Nodes: nodes}, nil, nil, nil)
		rec := &recorder{}
		h.Serve(&stream.Request{Method: "GET", Path: "/", Authority: "example.com"}, rec)
		var got []string
		for _, f := range rec.fields {
			if f.Name == "x" {
				got = append(got, f.Value)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: x = %q, want %q (%v)", tc.name, got, tc.want, rec.fields)
		}
	}
}

// TestManyImmediateEdits: more immediate edits than the writer's inline
// array holds all reach the response.
func TestManyImmediateEdits(t *testing.T) {
	var nodes []Node
	for i := 0; i < 9; i++ {
		nodes = append(nodes, editNode(t, true, []string{fmt.Sprintf("X-Edit-%d", i), "v"}))
	}
	nodes = append(nodes, Node{Do: &Respond{Status: 204, Static: Responder(204, "")}})
	h := NewHandler(&Table{Nodes: nodes}, nil, nil, nil)
	rec := &recorder{}
	h.Serve(&stream.Request{Method: "OPTIONS", Path: "/", Authority: "example.com"}, rec)
	for i := 0; i < 9; i++ {
		if !slices.ContainsFunc(rec.fields, func(f stream.Field) bool { return f.Name == fmt.Sprintf("x-edit-%d", i) }) {
			t.Errorf("x-edit-%d missing: %v", i, rec.fields)
		}
	}
}
