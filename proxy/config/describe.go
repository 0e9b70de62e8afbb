package config

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"
)

// Describe is what pollproxy understood from the Caddyfile, as JSON
// (pollproxy adapt prints it): the listeners and the sites each serves,
// the global options, the servers options and every site with its
// compiled routes in the order they run. Each value is written once, by
// its Go field name in snake_case; a field at its zero value (off, none,
// the default) is left out, durations read as 1m30s, places as
// file:line, matchers and handlers of an interface type carry their
// "type". Objects are written
// with sorted keys, so the same Caddyfile always gives the same bytes.
func (c *Config) Describe() ([]byte, error) {
	type hostSite struct {
		Host string `json:"host,omitempty"`
		Site string `json:"site"`
	}
	type listener struct {
		Listen    string     `json:"listen"`
		Cleartext bool       `json:"cleartext,omitempty"`
		Sites     []hostSite `json:"sites"`
	}
	var ls []listener
	for _, l := range c.Listeners() {
		out := listener{Listen: l.Addr, Cleartext: l.Cleartext}
		for _, h := range l.Hosts {
			out.Sites = append(out.Sites, hostSite{h.Host, h.Site.Pos.String()})
		}
		ls = append(ls, out)
	}
	cfg := *c
	sites, servers := cfg.Sites, cfg.Servers
	cfg.Sites, cfg.Servers, cfg.ServerOptions = nil, nil, ServerOptions{}
	doc := map[string]any{
		"listeners": ls,
		"global":    describe(reflect.ValueOf(cfg), 0),
		"servers":   describe(reflect.ValueOf(c.ServerOptions), 0),
		"sites":     describe(reflect.ValueOf(sites), 0),
	}
	if len(servers) > 0 {
		doc["servers_by_listener"] = describe(reflect.ValueOf(servers), 0)
	}
	return json.MarshalIndent(doc, "", "\t")
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	posType      = reflect.TypeOf(Pos{})
	stringerType = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
	textType     = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

// describe turns v into plain JSON values; nil stands for "leave out".
func describe(v reflect.Value, depth int) any {
	if depth > 48 || !v.IsValid() {
		return nil
	}
	if v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
	}
	if v.IsZero() {
		return nil
	}
	t := v.Type()
	switch {
	case t == durationType:
		return time.Duration(v.Int()).String()
	case t == posType:
		return v.Interface().(Pos).String()
	case t.Implements(textType) && v.Kind() != reflect.Interface:
		if b, err := v.Interface().(encoding.TextMarshaler).MarshalText(); err == nil {
			return emptyNil(string(b))
		}
	case t.Implements(stringerType) && v.Kind() != reflect.Interface && (v.Kind() != reflect.Struct || !hasExported(t)):
		return emptyNil(v.Interface().(fmt.Stringer).String())
	}
	switch v.Kind() {
	case reflect.Interface:
		inner := describe(v.Elem(), depth+1)
		if m, ok := inner.(map[string]any); ok {
			m["type"] = typeName(v.Elem().Type())
			return m
		}
		if inner == nil && isStruct(v.Elem().Type()) {
			return map[string]any{"type": typeName(v.Elem().Type())}
		}
		return inner
	case reflect.Pointer:
		return describe(v.Elem(), depth+1)
	case reflect.Struct:
		m := map[string]any{}
		structFields(v, m, depth)
		if len(m) == 0 {
			return nil
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return emptyNil(string(v.Bytes()))
		}
		if v.Len() == 0 {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = describe(v.Index(i), depth+1)
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		m := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			m[fmt.Sprint(it.Key().Interface())] = describe(it.Value(), depth+1)
		}
		return m
	case reflect.Bool:
		if !v.Bool() {
			return nil
		}
		return true
	case reflect.String:
		return emptyNil(v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() == 0 {
			return nil
		}
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() == 0 {
			return nil
		}
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		if v.Float() == 0 {
			return nil
		}
		return v.Float()
	}
	return nil // functions, channels: code, not configuration
}

// structFields adds v's exported, non-zero fields to m; an embedded
// struct's fields join its container's, as Go promotes them.
func structFields(v reflect.Value, m map[string]any, depth int) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			structFields(v.Field(i), m, depth+1)
			continue
		}
		if x := describe(v.Field(i), depth+1); x != nil {
			m[snake(f.Name)] = x
		}
	}
}

func isStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

func hasExported(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

func emptyNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// typeName is a matcher's or handler's type as "package.type".
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.String()
}

// snake is a Go name in snake_case: ACMECA is acmeca, ReadHeader
// read_header, TLSConfig tls_config.
func snake(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
