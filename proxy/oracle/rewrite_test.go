package oracle

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// A Caddyfile is rewritten before either server reads it, the same way
// for both, so that both listen on the test's loopback ports, send to the
// test's origin and read and write only the test's directories:
//
//   - every site address becomes https://HOST:S (S the test's https_port;
//     a batch of files prefixes each file's hosts with its own label, a
//     site without a host gets one), with `tls CERT KEY` (any tls line of
//     its own dropped): one certificate for every name of the batch, so
//     neither server issues any; the client skips verification; the
//     test's http_port H carries the HTTP->HTTPS redirects;
//   - every upstream (reverse_proxy, forward_auth, to) becomes a port of
//     the recording origin; DEAD becomes a closed port;
//   - every root becomes the test's document tree, every log output
//     `discard`;
//   - the global options get admin off, the ports, default_bind
//     127.0.0.1 and a storage directory per server; pollproxy-only
//     options are dropped for Caddy, Caddy-only ones (skip_install_trust)
//     added for Caddy alone;
//   - {$VAR:default} is its default.
//
// Files or sites the oracle cannot serve as written (TLS or unix-socket
// upstreams, dynamic upstreams) are reported as not compared.

// node is a Caddyfile line (its tokens) with the block it opens, if any.
type node struct {
	toks     []caddyfile.Token
	block    bool
	children []*node
}

func (n *node) word(i int) string {
	if i < len(n.toks) {
		return n.toks[i].Text
	}
	return ""
}

func (n *node) set(i int, text string) { n.toks[i] = tok(text) }

// renameRoutes gives a source's named routes (&(name)) the prefix, and
// its invokes with them, so that two sources served together may each
// define a route of one name.
func renameRoutes(nodes []*node, prefix string) {
	names := map[string]bool{}
	for _, n := range nodes {
		if w := n.word(0); strings.HasPrefix(w, "&(") && strings.HasSuffix(w, ")") {
			names[w[2:len(w)-1]] = true
			n.set(0, "&("+prefix+w[2:])
		}
	}
	var walk func([]*node)
	walk = func(ns []*node) {
		for _, n := range ns {
			if n.word(0) == "invoke" && len(n.toks) > 1 && names[n.word(len(n.toks)-1)] {
				n.set(len(n.toks)-1, prefix+n.word(len(n.toks)-1))
			}
			walk(n.children)
		}
	}
	walk(nodes)
}

func tok(text string) caddyfile.Token { return caddyfile.Token{Text: text} }

func line(words ...string) *node {
	n := &node{}
	for _, w := range words {
		n.toks = append(n.toks, tok(w))
	}
	return n
}

var envRE = regexp.MustCompile(`\{\$([A-Za-z0-9_]+)(?::([^}]*))?\}`)

// parseTree reads a Caddyfile into its lines and blocks.
func parseTree(text string) ([]*node, error) {
	text = envRE.ReplaceAllString(text, "$2")
	toks, err := caddyfile.Tokenize([]byte(text), "Caddyfile")
	if err != nil {
		return nil, err
	}
	var lines [][]caddyfile.Token
	for i, t := range toks {
		if i == 0 || toks[i-1].Line+toks[i-1].NumLineBreaks() != t.Line {
			lines = append(lines, nil)
		}
		lines[len(lines)-1] = append(lines[len(lines)-1], t)
	}
	// Site addresses may span lines ("a,\n b {").
	for i := 0; i+1 < len(lines); i++ {
		l := lines[i]
		if last := l[len(l)-1]; strings.HasSuffix(last.Text, ",") && !last.Quoted() {
			lines[i] = append(l, lines[i+1]...)
			lines = append(lines[:i+1], lines[i+2:]...)
			i--
		}
	}
	pos := 0
	nodes, err := parseBlock(lines, &pos)
	if err == nil && pos < len(lines) {
		err = fmt.Errorf("line %d: unexpected }", lines[pos][0].Line)
	}
	return nodes, err
}

func isBrace(t caddyfile.Token, b string) bool { return t.Text == b && !t.Quoted() }

func parseBlock(lines [][]caddyfile.Token, pos *int) ([]*node, error) {
	var out []*node
	for *pos < len(lines) {
		l := lines[*pos]
		if isBrace(l[0], "}") {
			return out, nil
		}
		*pos++
		n := &node{toks: l}
		if isBrace(l[len(l)-1], "{") {
			n.toks, n.block = l[:len(l)-1], true
			var err error
			if n.children, err = parseBlock(lines, pos); err != nil {
				return nil, err
			}
			if *pos >= len(lines) {
				return nil, fmt.Errorf("line %d: block not closed", l[0].Line)
			}
			*pos++ // the closing brace
		}
		out = append(out, n)
	}
	return out, nil
}

// format writes nodes back as a Caddyfile.
func format(nodes []*node) string {
	var b strings.Builder
	var write func([]*node, int)
	write = func(ns []*node, depth int) {
		for _, n := range ns {
			b.WriteString(strings.Repeat("\t", depth))
			for i, t := range n.toks {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(quote(t))
			}
			if n.block {
				if len(n.toks) > 0 {
					b.WriteByte(' ')
				}
				b.WriteString("{\n")
				write(n.children, depth+1)
				b.WriteString(strings.Repeat("\t", depth) + "}")
			}
			b.WriteByte('\n')
		}
	}
	write(nodes, 0)
	return b.String()
}

func quote(t caddyfile.Token) string {
	s := t.Text
	if !t.Quoted() && s != "" && !strings.ContainsAny(s, " \t\n\"`") {
		return s
	}
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// plan is a batch of Caddyfiles rewritten for one run: the text each
// server reads and the sites to send requests to.
type plan struct {
	https, http int
	caddy       string // the Caddyfile for Caddy, storage left as STORAGE
	pollproxy   string
	sites       []site
	skipped     []string // what was not compared, and why
	names       []string // every site name, for the certificate
}

// site is one site block to send requests to.
type site struct {
	label string // the source's name and the site's first address
	host  string // the Host to ask for
	src   *source
}

// upstreams maps a file's upstream addresses to origin ports.
type upstreams struct {
	o       *origin
	named   bool
	ports   map[string]int
	dead    int
	healthy map[string]bool
}

var dropGlobal = map[string]bool{"admin": true, "storage": true, "http_port": true, "https_port": true,
	"email": true, "acme_ca": true, "default_bind": true, "auto_https": true, "local_certs": true,
	"skip_install_trust": true, "debug": true, "grace_period": true,
	// Certificate automation and the choice of certificate by SNI: every
	// rewritten site brings its certificate file, so these change no
	// answer here, and the files the documentation's examples name do not
	// exist (TestOracleTLS compares handshakes).
	"key_type": true, "cert_lifetime": true, "ocsp_stapling": true, "ocsp_interval": true,
	"renew_interval": true, "renewal_window_ratio": true, "storage_clean_interval": true,
	"acme_ca_root": true, "acme_eab": true, "preferred_chains": true, "cert_issuer": true, "pki": true,
	"on_demand_tls": true, "default_sni": true, "fallback_sni": true, "persist_config": true,
	"shutdown_delay": true}

// pollproxyOnly are global options (and servers timeouts) Caddy does not have.
var pollproxyOnly = map[string]bool{"poller": true, "loops": true, "ab_interval": true, "ab_rotate": true,
	"h2_extended_connect": true, "handshake": true}

// build rewrites a batch of sources into one plan.
func build(srcs []*source, o *origin, https, http, dead int, www string) (*plan, error) {
	p := &plan{https: https, http: http}
	var globals []*node
	var rest []*node
sources:
	for i, src := range srcs {
		nodes, err := parseTree(src.caddyfile)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", src.name, err)
		}
		prefix := ""
		if len(srcs) > 1 {
			prefix = fmt.Sprintf("b%d.", i)
		}
		ups := &upstreams{o: o, named: src.namedUpstreams, ports: map[string]int{}, dead: dead}
		if prefix != "" {
			renameRoutes(nodes, prefix)
		}
		for j, n := range nodes {
			switch {
			case j == 0 && len(n.toks) == 0 && n.block:
				globals = append(globals, n.children...)
				editBody(n.children, ups, www)
			case strings.HasPrefix(n.word(0), "(") || strings.HasPrefix(n.word(0), "&("): // snippets and named routes
				if reason := editBody(n.children, ups, www); reason != "" {
					p.skipped = append(p.skipped, src.name+": "+reason)
					continue sources // its sites use the snippet
				}
				rest = append(rest, n)
			case n.block:
				label := src.name + " " + n.word(0)
				if reason := editBody(n.children, ups, www); reason != "" {
					p.skipped = append(p.skipped, label+": "+reason)
					continue
				}
				var kept []*node
				for _, c := range n.children {
					if c.word(0) != "tls" {
						kept = append(kept, c)
					}
				}
				n.children = append(kept, line("tls", "CERTFILE", "KEYFILE"))
				host := ""
				for k, t := range n.toks {
					h := siteHost(strings.TrimSuffix(t.Text, ","), prefix, k)
					p.names = append(p.names, h)
					if host == "" {
						host = strings.Replace(h, "*", "a", 1)
					}
					text := fmt.Sprintf("https://%s:%d", h, https)
					if k < len(n.toks)-1 {
						text += ","
					}
					n.set(k, text)
				}
				p.sites = append(p.sites, site{label: label, host: host, src: src})
				rest = append(rest, n)
			default:
				return nil, fmt.Errorf("%s: line %d: not a block", src.name, n.toks[0].Line)
			}
		}
		for path := range ups.healthy {
			o.skip[path] = true
		}
	}
	common := []*node{line("admin", "off"), line("http_port", strconv.Itoa(http)),
		line("https_port", strconv.Itoa(https)), line("default_bind", "127.0.0.1"),
		line("storage", "file_system", "STORAGE")}
	var kept []*node
	for _, g := range globals {
		if !dropGlobal[g.word(0)] {
			kept = append(kept, g)
		}
	}
	pp := append(append([]*node{}, common...), kept...)
	cd := append(append([]*node{}, common...), line("skip_install_trust"))
	cd = append(cd, withoutPollproxyOnly(kept)...)
	p.pollproxy = format(append([]*node{{block: true, children: pp}}, rest...))
	p.caddy = format(append([]*node{{block: true, children: cd}}, rest...))
	return p, nil
}

func withoutPollproxyOnly(ns []*node) []*node {
	var out []*node
	for _, n := range ns {
		if pollproxyOnly[n.word(0)] {
			continue
		}
		c := *n
		c.children = withoutPollproxyOnly(n.children)
		out = append(out, &c)
	}
	return out
}

// siteHost is the host a site address is served as: its own host with
// the batch's prefix, or a name made from its port when it has none.
func siteHost(addr, prefix string, k int) string {
	addr = strings.TrimPrefix(strings.TrimPrefix(addr, "https://"), "http://")
	addr, _, _ = strings.Cut(addr, "/")
	host := addr
	if h, port, err := net.SplitHostPort(addr); err == nil {
		host = h
		if host == "" {
			host = "port" + port + ".test"
		}
	}
	if host == "" {
		host = fmt.Sprintf("any%d.test", k)
	}
	if strings.HasPrefix(host, "*.") {
		return "*." + prefix + host[2:]
	}
	return prefix + host
}

// editBody rewrites a site's (or snippet's) directives in place; a
// reason, when not empty, is why the oracle cannot serve it.
func editBody(ns []*node, ups *upstreams, www string) string {
	for _, n := range ns {
		switch n.word(0) {
		case "reverse_proxy", "forward_auth", "to":
			args := 1
			if n.word(0) != "to" && len(n.toks) > 1 {
				if w := n.word(1); w == "*" || strings.HasPrefix(w, "/") || strings.HasPrefix(w, "@") {
					args = 2
				}
			}
			for i := args; i < len(n.toks); i++ {
				addr, reason := ups.addr(n.word(i))
				if reason != "" {
					return reason
				}
				n.set(i, addr)
			}
		case "health_upstream":
			addr, reason := ups.addr(n.word(1))
			if reason != "" {
				return reason
			}
			n.set(1, addr)
		case "dynamic":
			return "dynamic upstreams are not compared"
		case "tls", "tls_insecure_skip_verify", "tls_trust_pool", "tls_server_name", "tls_trusted_ca_certs", "tls_client_auth":
			if len(ns) > 0 && isTransport(ns) {
				return "TLS to the origin is not compared"
			}
		case "health_uri":
			if ups.healthy == nil {
				ups.healthy = map[string]bool{}
			}
			ups.healthy[n.word(1)] = true
		case "root":
			if len(n.toks) > 1 {
				n.set(len(n.toks)-1, www)
			}
		case "output":
			n.toks, n.block, n.children = []caddyfile.Token{tok("output"), tok("discard")}, false, nil
			continue
		}
		if reason := editBody(n.children, ups, www); reason != "" {
			return reason
		}
	}
	return ""
}

// isTransport tells whether ns are a transport block's lines (a tls line
// there means TLS to the origin, a tls line in a site block does not).
func isTransport(ns []*node) bool {
	for _, n := range ns {
		switch n.word(0) {
		case "dial_timeout", "response_header_timeout", "read_timeout", "write_timeout", "keepalive",
			"tls_insecure_skip_verify", "tls_trust_pool", "tls_server_name", "tls_trusted_ca_certs", "versions":
			return true
		}
	}
	return false
}

// addr maps one upstream address to an origin port.
func (u *upstreams) addr(a string) (string, string) {
	if a == "DEAD" {
		return fmt.Sprintf("127.0.0.1:%d", u.dead), ""
	}
	switch {
	case strings.HasPrefix(a, "unix/"):
		return "", "unix socket upstreams are not compared"
	case strings.HasPrefix(a, "h2c://"):
		// The origin's ports take HTTP/2 with prior knowledge too.
		addr, reason := u.addr(strings.TrimPrefix(a, "h2c://"))
		if reason != "" {
			return "", reason
		}
		return "h2c://" + addr, ""
	case strings.Contains(a, "://") && !strings.HasPrefix(a, "http://"):
		return "", "upstream " + a + " is not compared (TLS or another scheme)"
	case strings.Contains(a, "{"):
		return "", "placeholder upstreams are not compared"
	}
	key := strings.TrimPrefix(a, "http://")
	port, ok := u.ports[key]
	if !ok {
		name := ""
		if u.named {
			name = fmt.Sprintf("u%d", len(u.ports)+1)
		}
		port = u.o.listen(name)
		u.ports[key] = port
	}
	return fmt.Sprintf("127.0.0.1:%d", port), ""
}
