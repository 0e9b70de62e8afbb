package route

// CEL expressions, compiled once per (re)load as Caddy compiles them:
// placeholders ({method}, {path}, {header.X} ...) become calls that read
// the request, and matcher functions (path('/api/*'), method('GET'),
// host(...), protocol(...), remote_ip(...), client_ip(...),
// path_regexp(...), header({'Field': 'value'}), query({'key': 'value'}))
// receive the request as a hidden first argument. A CEL evaluation
// allocates; a site that must not allocate per request uses the plain
// matchers instead.

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// reqType is the opaque type of the hidden request argument.
var reqType = cel.OpaqueType("pollproxy.request")

// reqVal carries a matcher context through CEL.
type reqVal struct{ c *Ctx }

func (v reqVal) ConvertToNative(reflect.Type) (any, error) { return v.c, nil }
func (v reqVal) ConvertToType(ref.Type) ref.Val            { return types.NewErr("a request converts to nothing") }
func (v reqVal) Equal(ref.Val) ref.Val                     { return types.False }
func (v reqVal) Type() ref.Type                            { return reqType }
func (v reqVal) Value() any                                { return v.c }

// stringMatchers are the matcher functions taking strings, and how each
// builds its matcher from them; name is the named matcher's, which names
// the captures of a regexp that names none.
var stringMatchers = map[string]func(args []string, name string) (Matcher, error){
	"path": func(a []string, _ string) (Matcher, error) { return NewPath(a) },
	"host": func(a []string, _ string) (Matcher, error) { return NewHost(a), nil },
	"method": func(a []string, _ string) (Matcher, error) {
		m := make(Method, len(a))
		for i, s := range a {
			m[i] = strings.ToUpper(s)
		}
		return m, nil
	},
	"protocol": func(a []string, _ string) (Matcher, error) { return Protocol(a[0]), nil },
	"remote_ip": func(a []string, _ string) (Matcher, error) {
		r, err := ParseRanges(a)
		return RemoteIP(r), err
	},
	"client_ip": func(a []string, _ string) (Matcher, error) {
		r, err := ParseRanges(a)
		return ClientIP(r), err
	},
	// path_regexp([name,] regexp)
	"path_regexp": func(a []string, name string) (Matcher, error) {
		if len(a) > 2 {
			return nil, fmt.Errorf("path_regexp wants [name,] regexp")
		}
		if len(a) == 2 && a[0] != "" {
			name = a[0]
		}
		re, err := regexp.Compile(a[len(a)-1])
		return PathRegexp{Re: re, Name: name}, err
	},
	// vars_regexp([name,] key, regexp)
	"vars_regexp": func(a []string, name string) (Matcher, error) {
		if len(a) < 2 || len(a) > 3 {
			return nil, fmt.Errorf("vars_regexp wants [name,] key, regexp")
		}
		if len(a) == 3 && a[0] != "" {
			name = a[0]
		}
		key, err := NewVarKey(a[len(a)-2])
		if err != nil {
			return nil, err
		}
		re, err := regexp.Compile(a[len(a)-1])
		return VarsRegexp{{Key: key, Re: re, Capture: name}}, err
	},
	// header_regexp([name,] field, regexp)
	"header_regexp": func(a []string, name string) (Matcher, error) {
		if len(a) < 2 || len(a) > 3 {
			return nil, fmt.Errorf("header_regexp wants [name,] field, regexp")
		}
		if len(a) == 3 && a[0] != "" {
			name = a[0]
		}
		re, err := regexp.Compile(a[len(a)-1])
		return HeaderRegexp{Name: strings.ToLower(a[len(a)-2]), Re: re, Capture: name}, err
	},
}

// fileMatcher builds Caddy's file matcher for file(): package site, where
// the matcher and its disk work live, provides it (SetFileMatcher).
var fileMatcher func(root string, try []string, policy string, split []string) (Matcher, error)

// SetFileMatcher gives expressions their file() function: build makes
// the file matcher of a root ("": the request's), candidates (none:
// {path}), a try_policy and split_path. It is called once, at start, by
// package site.
func SetFileMatcher(build func(root string, try []string, policy string, split []string) (Matcher, error)) {
	fileMatcher = build
}

// fileCall builds file()'s matcher from its arguments, as Caddy's:
// strings are candidates, a map has root, try_files, try_policy and
// split_path.
func fileCall(vals map[string][]string) Matcher {
	if fileMatcher == nil || len(vals["fs"]) > 0 {
		return never{}
	}
	first := func(k string) string {
		if v := vals[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	m, err := fileMatcher(first("root"), vals["try_files"], first("try_policy"), vals["split_path"])
	if err != nil {
		return never{}
	}
	return m
}

var celEnv = func() *cel.Env {
	opts := []cel.EnvOption{cel.Variable("req", reqType),
		cel.Function("ph", cel.Overload("ph_req_string", []*cel.Type{reqType, cel.StringType}, cel.StringType,
			cel.BinaryBinding(func(r, name ref.Val) ref.Val {
				t, err := ParseTemplate("{"+string(name.(types.String))+"}", TemplateOptions{ReplaceAll: true})
				if err != nil {
					return types.NewErr("%v", err)
				}
				return types.String(t.Expand(r.(reqVal).c.Req))
			}))),
		// The status placeholders are numbers, as Caddy's are in an
		// expression: {err.status_code} >= 500.
		cel.Function("phint", cel.Overload("phint_req_string", []*cel.Type{reqType, cel.StringType}, cel.IntType,
			cel.BinaryBinding(func(r, name ref.Val) ref.Val {
				t, err := ParseTemplate("{"+string(name.(types.String))+"}", TemplateOptions{ReplaceAll: true})
				if err != nil {
					return types.NewErr("%v", err)
				}
				n, _ := strconv.Atoi(t.Expand(r.(reqVal).c.Req))
				return types.Int(n)
			}))),
	}
	for n := 0; n <= 6; n++ {
		args := []*cel.Type{reqType}
		for i := 0; i < n; i++ {
			args = append(args, cel.StringType)
		}
		opts = append(opts, cel.Function("file", cel.Overload(fmt.Sprintf("file_%d", n), args, cel.BoolType,
			cel.FunctionBinding(func(vs ...ref.Val) ref.Val {
				try := make([]string, len(vs)-1)
				for i, v := range vs[1:] {
					try[i] = string(v.(types.String))
				}
				return types.Bool(fileCall(map[string][]string{"try_files": try}).Match(vs[0].(reqVal).c))
			}))))
	}
	for name, build := range stringMatchers {
		for n := 1; n <= 6; n++ {
			args := []*cel.Type{reqType}
			for i := 0; i < n; i++ {
				args = append(args, cel.StringType)
			}
			build := build
			opts = append(opts, cel.Function(name, cel.Overload(fmt.Sprintf("%s_%d", name, n), args, cel.BoolType,
				cel.FunctionBinding(func(vs ...ref.Val) ref.Val {
					strs := make([]string, len(vs)-1)
					for i, v := range vs[1:] {
						strs[i] = string(v.(types.String))
					}
					c := vs[0].(reqVal).c
					m, err := build(strs, c.matcherName)
					if err != nil {
						return types.NewErr("%v", err)
					}
					return types.Bool(m.Match(c))
				}))))
		}
	}
	mapFn := func(name string, build func(map[string][]string) Matcher) cel.EnvOption {
		return cel.Function(name, cel.Overload(name+"_map", []*cel.Type{reqType, cel.MapType(cel.StringType, cel.DynType)}, cel.BoolType,
			cel.BinaryBinding(func(r, m ref.Val) ref.Val {
				native, err := m.ConvertToNative(reflect.TypeOf(map[string]any{}))
				if err != nil {
					return types.NewErr("%v", err)
				}
				vals := map[string][]string{}
				for k, v := range native.(map[string]any) {
					switch v := v.(type) {
					case string:
						vals[k] = append(vals[k], v)
					case []any:
						for _, e := range v {
							vals[k] = append(vals[k], fmt.Sprint(e))
						}
					default:
						vals[k] = append(vals[k], fmt.Sprint(v))
					}
				}
				return types.Bool(build(vals).Match(r.(reqVal).c))
			})))
	}
	opts = append(opts,
		mapFn("header", func(m map[string][]string) Matcher {
			var h Header
			for k, v := range m {
				h = append(h, HeaderField{Name: strings.ToLower(k), Values: v})
			}
			return h
		}),
		mapFn("file", fileCall),
		mapFn("vars", func(m map[string][]string) Matcher {
			var v Vars
			for k, vals := range m {
				key, err := NewVarKey(k)
				if err != nil {
					return never{}
				}
				f := VarsField{Key: key}
				for _, val := range vals {
					t, err := ParseTemplate(val, TemplateOptions{ReplaceAll: true})
					if err != nil {
						return never{}
					}
					f.Values = append(f.Values, t)
				}
				v = append(v, f)
			}
			return v
		}),
		mapFn("query", func(m map[string][]string) Matcher {
			var q Query
			for k, v := range m {
				q = append(q, QueryParam{Key: k, Values: v})
			}
			return q
		}))
	env, err := cel.NewEnv(opts...)
	if err != nil {
		panic(err)
	}
	return env
}()

// matcherCall finds a matcher function called at i in src.
var matcherCall = regexp.MustCompile(`^(path|host|method|protocol|remote_ip|client_ip|path_regexp|header_regexp|header|query|vars_regexp|vars|file)\s*\(`)

// numericPlaceholders are the placeholders an expression reads as ints.
var numericPlaceholders = map[string]bool{"err.status_code": true, "http.error.status_code": true,
	"rp.status_code": true, "http.reverse_proxy.status_code": true,
	"resp.status_code": true, "http.intercept.status_code": true}

// rewriteCEL turns Caddy's expression syntax into plain CEL: {name} into
// ph(req, "name"), f(args) into f(req, args), outside string literals.
func rewriteCEL(src string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '{' {
				if m := literalPlaceholder.FindStringSubmatch(src[i:]); m != nil {
					// Caddy rewrites a placeholder inside a string as
					// anywhere else, so the string holds the call's text
					// (and a double-quoted one no longer parses).
					fmt.Fprintf(&b, `ph(req, "%s")`, LongName(m[1]))
					i += len(m[0]) - 1
					continue
				}
			}
			b.WriteByte(c)
			if c == '\\' && i+1 < len(src) {
				i++
				b.WriteByte(src[i])
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '\'' || c == '"':
			quote = c
		case c == '{':
			if end := strings.IndexByte(src[i:], '}'); end > 0 && !strings.ContainsAny(src[i+1:i+end], " :'\",{") {
				fn := "ph"
				if numericPlaceholders[src[i+1:i+end]] {
					fn = "phint"
				}
				fmt.Fprintf(&b, "%s(req, %q)", fn, src[i+1:i+end])
				i += end
				continue
			}
		default:
			prevIdent := i > 0 && (isIdent(src[i-1]) || src[i-1] == '.')
			if m := matcherCall.FindString(src[i:]); m != "" && !prevIdent {
				b.WriteString(m)
				if rest := strings.TrimLeft(src[i+len(m):], " \t"); strings.HasPrefix(rest, ")") {
					b.WriteString("req") // file(): the request alone
				} else {
					b.WriteString("req, ")
				}
				i += len(m) - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// literalPlaceholder is a placeholder as Caddy's expression matcher
// finds one, inside strings too.
var literalPlaceholder = regexp.MustCompile(`^\{([a-zA-Z][\w.-]+)\}`)

// placeholderRef finds the placeholders of an expression.
var placeholderRef = regexp.MustCompile(`\{[a-z_.]+[A-Za-z0-9_.-]*\}`)

// Expression is a compiled CEL matcher.
type Expression struct {
	Source string
	name   string // the named matcher's, for the captures of its regexps
	prg    cel.Program
}

// CompileExpression compiles a Caddy expression matcher of the named
// matcher name (without its @); the error names what CEL refused.
func CompileExpression(src, name string) (Matcher, error) {
	// Placeholders first: one pollproxy lacks ({err.status_code}) is
	// "not supported", not a CEL type error about what it would return.
	for _, p := range placeholderRef.FindAllString(src, -1) {
		if _, err := ParseTemplate(p, TemplateOptions{}); err != nil {
			return nil, fmt.Errorf("expression %s: %v", src, err)
		}
	}
	ast, iss := celEnv.Compile(rewriteCEL(src))
	if iss.Err() != nil {
		hint := ""
		if strings.Contains(src, `\`) {
			// Caddy refuses the same line: CEL reads escapes in its
			// strings before the regexp sees them.
			hint = ` a backslash in a CEL string starts a CEL escape, in Caddy as here (write \\w, or a raw string r'^/(\w+)'):`
		}
		return nil, fmt.Errorf("expression %s:%s %v", src, hint, iss.Err())
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("expression %s: is %s, want a bool", src, ast.OutputType())
	}
	prg, err := celEnv.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("expression %s: %v", src, err)
	}
	return &Expression{Source: src, name: name, prg: prg}, nil
}

// Match implements Matcher: an evaluation error is no match.
func (e *Expression) Match(c *Ctx) bool {
	outer := c.matcherName
	c.matcherName = e.name
	out, _, err := e.prg.Eval(map[string]any{"req": reqVal{c}})
	c.matcherName = outer
	if err != nil {
		return false
	}
	b, ok := out.(types.Bool)
	return ok && bool(b)
}

// never is a matcher that matches no request: a CEL call whose
// arguments do not compile.
type never struct{}

func (never) Match(*Ctx) bool { return false }
