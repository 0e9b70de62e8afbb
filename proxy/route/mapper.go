package route

import (
	"regexp"
	"slices"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Map is a compiled map directive: it defines the placeholders Dests,
// each filled, when read, from the first mapping whose input the source
// matches, as Caddy's map handler does. A request that passes the
// directive carries it (stream.Request.Mapped), so the values follow the
// request as it is when a placeholder is read, not as it was when the
// route ran.
type Map struct {
	Source   Template
	Dests    []string // the placeholders' names, without braces
	Mappings []Mapping
	// Defaults are the values when no mapping has an output for a
	// destination (nil: none, and the placeholder is empty).
	Defaults []Template
}

// Mapping is one line of a map block: an input (a literal, or a regexp
// written ~RE) and one output per destination, nil where the line wrote
// "-" or left it out.
type Mapping struct {
	Input string
	Re    *regexp.Regexp
	// Outputs are filled from the request for a literal input; Raw are
	// the outputs as written, a regexp's expansion template ($1, ${name}),
	// whose placeholders Caddy leaves as they are.
	Outputs []*Template
	Raw     []string
}

// AppendMapped implements stream.Mapper.
func (m *Map) AppendMapped(dst []byte, name string, r *stream.Request) ([]byte, bool) {
	i := slices.Index(m.Dests, name)
	if i < 0 {
		return dst, false
	}
	input := m.Source.Expand(r)
	for _, mp := range m.Mappings {
		if mp.Outputs[i] == nil {
			continue
		}
		if mp.Re != nil {
			idx := mp.Re.FindStringSubmatchIndex(input)
			if idx == nil {
				continue
			}
			return mp.Re.ExpandString(dst, mp.Raw[i], input, idx), true
		}
		if input == mp.Input {
			return mp.Outputs[i].Append(dst, r), true
		}
	}
	if i < len(m.Defaults) {
		return m.Defaults[i].Append(dst, r), true
	}
	return dst, true
}

// PassMap records that the request passed the map directive m.
func PassMap(m *Map, r *stream.Request) {
	for _, x := range r.Mapped {
		if x == stream.Mapper(m) { // the routes run again after a file lookup
			return
		}
	}
	r.Mapped = append(r.Mapped, m)
}
