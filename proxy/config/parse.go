package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
)

// Load reads and parses the Caddyfile at path.
func Load(path string) (*Config, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{{Msg: fmt.Sprintf("reading configuration: %v", err)}}
	}
	return Parse(path, body)
}

// Parse parses a Caddyfile read from filename (imports are relative to
// it). The error, when not nil, is an Errors listing every problem found.
func Parse(filename string, body []byte) (*Config, error) {
	blocks, err := caddyfile.Parse(filename, body)
	if err != nil {
		return nil, Errors{lexError(filename, err)}
	}
	p := &parser{cfg: &Config{
		File:        filename,
		Admin:       DefaultAdmin,
		GracePeriod: DefaultGracePeriod,
		HTTPPort:    DefaultHTTPPort,
		HTTPSPort:   DefaultHTTPSPort,
	}}
	for _, b := range blocks {
		if b.IsNamedRoute && len(b.Keys) > 0 { // before the sites: any may invoke one
			p.namedRouteBlock(b)
		}
	}
	for i, b := range blocks {
		if len(b.Keys) == 0 {
			if i != 0 {
				p.errAt(Pos{filename, 0}, "global options block must come first")
				continue
			}
			p.global(b)
			continue
		}
		if b.IsNamedRoute {
			continue
		}
		p.site(b)
	}
	if len(p.errs) == 0 && len(p.cfg.Sites) == 0 {
		p.errAt(Pos{filename, 1}, "no site block (want e.g. \"localhost:8443 { reverse_proxy :8080 }\")")
	}
	p.resolveLogs()
	p.schemes()
	p.checkPKIPools()
	p.checkDuplicates()
	p.checkProtocols()
	p.checkMaps()
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool {
			a, b := p.errs[i].Pos, p.errs[j].Pos
			if a.File != b.File {
				return a.File == filename // the main file first, imports after
			}
			return a.Line < b.Line
		})
		return nil, p.errs
	}
	return p.cfg, nil
}

type parser struct {
	cfg        *Config
	errs       Errors
	named      map[string]route.Matcher // the site's named matchers
	logCounter int                      // the next unnamed site log is "log" + logCounter
	order      []string                 // the directive order, after the order options (order.go)
	ranks      map[string]int
	srv        *ServerOptions // the servers block being read
	// seenServers are the listeners servers blocks named ("": the global one).
	seenServers map[string]bool
	cur         *Site // the site being read
	// inResponse counts the handle_response blocks being read: only
	// their routes may copy_response, as in Caddy.
	inResponse int
	// maps are the map directives read, for checkMaps.
	maps []mapAt
	// routes are the named route blocks (namedroute.go); invoking, the
	// names being compiled, innermost last.
	routes   map[string]*namedRoute
	invoking []string
}

func tokPos(t caddyfile.Token) Pos { return Pos{t.File, t.Line} }

func dpos(d *caddyfile.Dispenser) Pos { return Pos{d.File(), d.Line()} }

func (p *parser) errAt(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) errf(d *caddyfile.Dispenser, format string, args ...any) {
	p.errAt(dpos(d), format, args...)
}

// openedBlock reports whether a block follows on the current line, and
// consumes it, for directives that take none; at is the line it opens on.
func openedBlock(d *caddyfile.Dispenser) (Pos, bool) {
	n := d.Nesting()
	at := dpos(d)
	if !d.NextBlock(n) {
		return at, false
	}
	for d.NextBlock(n) {
	}
	return at, true
}

// skipBlock consumes the block opened on the current line, if any, so
// that parsing resumes after an error inside it.
func skipBlock(d *caddyfile.Dispenser) {
	for n := d.Nesting(); d.NextBlock(n); {
	}
}

// oneArg reads exactly one argument.
func (p *parser) oneArg(d *caddyfile.Dispenser, label, want string) (string, bool) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		p.errf(d, "%s: want one argument: %s", label, want)
		skipBlock(d)
		return "", false
	}
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "%s: takes no block", label)
	}
	return args[0], true
}

func (p *parser) intArg(d *caddyfile.Dispenser, label string, min int) int {
	v, ok := p.oneArg(d, label, "a number")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		p.errf(d, "%s: %q: want a whole number >= %d", label, v, min)
		return 0
	}
	return n
}

func (p *parser) durationArg(d *caddyfile.Dispenser, label string) time.Duration {
	v, ok := p.oneArg(d, label, "a duration such as 10s")
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(v)
	if err != nil || dur <= 0 {
		p.errf(d, "%s: %q: want a positive duration such as 500ms, 10s or 2m", label, v)
		return 0
	}
	return dur
}

// checkDuplicates refuses two sites claiming the same host on one port.
func (p *parser) checkDuplicates() {
	seen := map[string]*Site{}
	for _, s := range p.cfg.Sites {
		if s.bind {
			continue
		}
		for _, a := range s.Addrs {
			key := a.Host + "|" + strconv.Itoa(a.Port)
			if prev := seen[key]; prev != nil && prev != s {
				p.errAt(s.Pos, "site %s: host %q on port %d is also served by the site at %s", a.Original, a.Host, a.Port, prev.Pos)
				continue
			}
			seen[key] = s
		}
	}
}
