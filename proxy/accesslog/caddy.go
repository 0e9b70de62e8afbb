package accesslog

import (
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// The entry Caddy's access log writes, field for field, so GoAccess's
// caddy format, Loki queries and the like read pollproxy's:
//
//	{"level":"info","ts":1767366245.000412,"logger":"http.log.access.log0","msg":"handled request",
//	 "request":{"remote_ip":"192.0.2.7","remote_port":"5555","client_ip":"192.0.2.7","proto":"HTTP/2.0",
//	  "method":"GET","host":"example.com","uri":"/a","headers":{"User-Agent":["curl/8"]},
//	  "tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"example.com","ech":false}},
//	 "bytes_read":0,"user_id":"","duration":0.000412,"size":1024,"status":200,
//	 "resp_headers":{"Content-Type":["text/html"]}, ...pollproxy's own fields}
//
// Caddy's console format is the same fields after a tab-separated prefix
// (wall-clock time in milliseconds, the level in color, the logger's name,
// the message).

// appendJSON appends r as one line of Caddy's json format.
func (l *Logger) appendJSON(b []byte, r *observe.RequestLog) []byte {
	end := r.Start.Add(r.Duration)
	b = append(b, `{"level":"`...)
	b = append(b, level(r).String()...)
	b = append(b, `","ts":`...)
	b = strconv.AppendFloat(b, float64(end.UnixNano())/float64(time.Second), 'f', -1, 64)
	b = append(b, `,"logger":`...)
	b = appendString(b, l.logger)
	b = append(b, `,"msg":"handled request",`...)
	b = l.appendFields(b, r)
	return append(b, "}\n"...)
}

// consoleColors are zap's level colors, which Caddy's console format uses
// by default.
var consoleColors = map[Level]string{Debug: "35", Info: "34", Warn: "33", Error: "31"}

// appendConsole appends r as one line of Caddy's console format.
func (l *Logger) appendConsole(b []byte, r *observe.RequestLog) []byte {
	end := r.Start.Add(r.Duration).UTC()
	b = end.AppendFormat(b, "2006/01/02 15:04:05.000")
	b = append(b, '\t')
	lv := level(r)
	b = append(b, "\x1b["...)
	b = append(b, consoleColors[lv]...)
	b = append(b, 'm')
	b = append(b, strings.ToUpper(lv.String())...)
	b = append(b, "\x1b[0m\t"...)
	b = append(b, l.logger...)
	b = append(b, "\thandled request\t{"...)
	b = l.appendFields(b, r)
	return append(b, "}\n"...)
}

// appendFields appends the entry's fields after the message, without
// braces.
func (l *Logger) appendFields(b []byte, r *observe.RequestLog) []byte {
	v := l.view(r)
	b = append(b, `"request":{`...)
	if !v.omit[0] {
		b = append(b, `"remote_ip":`...)
		b = appendString(b, v.remoteIP)
		b = append(b, ',')
	}
	b = append(b, `"remote_port":"`...)
	b = strconv.AppendUint(b, uint64(r.Remote.Port()), 10)
	b = append(b, '"')
	if !v.omit[1] {
		b = append(b, `,"client_ip":`...)
		b = appendString(b, v.clientIP)
	}
	b = append(b, `,"proto":`...)
	b = appendString(b, r.Proto)
	b = append(b, `,"method":`...)
	b = appendString(b, r.Method)
	b = append(b, `,"host":`...)
	b = appendString(b, r.Authority)
	if !v.omit[2] {
		b = append(b, `,"uri":`...)
		b = appendString(b, v.uri)
	}
	b = append(b, `,"headers":`...)
	b = appendHeader(b, v.header, v.headerRepl, v.headerEmpty)
	if t := r.TLS; t != nil {
		b = append(b, `,"tls":{"resumed":`...)
		b = strconv.AppendBool(b, t.Resumed)
		b = append(b, `,"version":`...)
		b = strconv.AppendUint(b, uint64(t.Version), 10)
		b = append(b, `,"cipher_suite":`...)
		b = strconv.AppendUint(b, uint64(t.CipherSuite), 10)
		b = append(b, `,"proto":`...)
		b = appendString(b, t.Proto)
		b = append(b, `,"server_name":`...)
		b = appendString(b, t.ServerName)
		b = append(b, `,"ech":`...)
		b = strconv.AppendBool(b, t.ECH)
		b = append(b, '}')
	}
	b = append(b, `},"bytes_read":`...)
	b = strconv.AppendInt(b, r.BytesRead, 10)
	if !v.omit[3] {
		b = append(b, `,"user_id":`...)
		b = appendString(b, v.userID)
	}
	b = append(b, `,"duration":`...)
	b = strconv.AppendFloat(b, float64(r.Duration)/float64(time.Second), 'f', -1, 64) // zap's seconds
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, r.BytesOut, 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"resp_headers":`...)
	b = appendHeader(b, v.resp, v.respRepl, v.respEmpty)
	// pollproxy's own fields, after Caddy's.
	b = append(b, `,"upstream":`...)
	b = appendString(b, r.Upstream)
	b = append(b, `,"reused":`...)
	b = strconv.AppendBool(b, r.Reused)
	b = append(b, `,"poller":`...)
	b = appendString(b, r.Poller)
	b = append(b, `,"loop":`...)
	b = strconv.AppendInt(b, int64(r.Loop), 10)
	if r.Reason != observe.ReasonNone {
		// error in words, as the client read it; reason as the metrics
		// label it, for filtering.
		b = append(b, `,"error":`...)
		b = appendString(b, r.ErrorText())
		b = append(b, `,"reason":`...)
		b = appendString(b, r.Reason.String())
	}
	if r.Tunnel {
		// One entry per tunnel, when it ends: size is the origin's
		// direction, bytes_in the client's, duration its whole life.
		b = append(b, `,"tunnel":true,"bytes_in":`...)
		b = strconv.AppendInt(b, r.BytesIn, 10)
		b = append(b, `,"tunnel_end":`...)
		b = appendString(b, r.TunnelEnd())
	}
	for _, f := range l.opts.Append {
		b = append(b, ',')
		b = appendString(b, f.Name)
		b = append(b, ':')
		b = append(b, f.Value...)
	}
	return b
}

// appendHeader appends fields as Caddy logs an http.Header: canonical
// names, each with its values in an array, in the order the names first
// appear (credentials were redacted by view). repl are fields a replace
// filter made one string, empty fields a cookie filter left empty.
func appendHeader(b []byte, fs []stream.Field, repl [][2]string, empty []string) []byte {
	b = append(b, '{')
	for _, r := range repl {
		if len(b) > 0 && b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = appendString(b, textproto.CanonicalMIMEHeaderKey(r[0]))
		b = append(b, ':')
		b = appendString(b, r[1])
	}
	for _, name := range empty {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = appendString(b, textproto.CanonicalMIMEHeaderKey(name))
		b = append(b, ":[]"...)
	}
	for i, f := range fs {
		if seen(fs[:i], f.Name) {
			continue
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = appendString(b, textproto.CanonicalMIMEHeaderKey(f.Name))
		b = append(b, ":["...)
		first := true
		for _, g := range fs[i:] {
			if g.Name != f.Name {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendString(b, g.Value)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func seen(fs []stream.Field, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// credential reports the fields Caddy redacts unless log_credentials.
func credential(name string) bool {
	switch name {
	case "cookie", "set-cookie", "authorization", "proxy-authorization":
		return true
	}
	return false
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
