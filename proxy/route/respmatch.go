package route

import (
	"fmt"
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// ResponseMatch is Caddy's response matcher (header's match block): the
// response's status is one of Status, if any are listed, and every field
// of Header matches.
type ResponseMatch struct {
	// Status lists codes (404) and classes (2xx stored as 2).
	Status []int
	Header []HeaderField
}

// AddStatus reads the codes of a status line: 404, or 2xx for a class.
func (m *ResponseMatch) AddStatus(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("status: want one or more codes such as 200 or 2xx")
	}
	for _, a := range args {
		if len(a) == 3 && a[1:] == "xx" && a[0] >= '1' && a[0] <= '5' {
			m.Status = append(m.Status, int(a[0]-'0'))
			continue
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 100 || n > 999 {
			return fmt.Errorf("status: %q: want a code such as 200 or a class such as 2xx", a)
		}
		m.Status = append(m.Status, n)
	}
	return nil
}

// AddHeader reads a header line: FIELD [VALUE...], !FIELD for absent.
// Lines for the same field add values any of which may match, as in
// Caddy (a list of Content-Types, one a line).
func (m *ResponseMatch) AddHeader(args []string) error {
	f, err := ParseHeaderField(args)
	if err != nil {
		return fmt.Errorf("header: %v", err)
	}
	for i := range m.Header {
		if h := &m.Header[i]; h.Name == f.Name && !h.Absent && !f.Absent {
			h.Values = append(h.Values, f.Values...)
			return nil
		}
	}
	m.Header = append(m.Header, f)
	return nil
}

// Matches reports whether a response with status and fields matches.
func (m *ResponseMatch) Matches(status int, fields []stream.Field) bool {
	if len(m.Status) > 0 {
		ok := false
		for _, s := range m.Status {
			if s == status || s < 10 && status/100 == s {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for i := range m.Header {
		if !m.Header[i].matchFields(fields) {
			return false
		}
	}
	return true
}
