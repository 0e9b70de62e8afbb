package config

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/accesslog"
)

// Log is one logger: a site's log directive (an access log for that
// site, Caddy's meaning) or a global log option (a logger whose output,
// format and level the sites' logs take when they name none).
type Log struct {
	Pos Pos
	// Name is the logger's name: a site's "log NAME", or "log0", "log1"
	// ... for an unnamed log with settings of its own, "" for a bare
	// "log" (Caddy's http.log.access); a global option's name, "default"
	// without one.
	Name      string
	Output    accesslog.Output
	Format    string // json, console, or pollproxy's common
	Level     accesslog.Level
	Hostnames []string                // site logs only: the hosts it logs
	Filters   []accesslog.Filter      // format filter's field filters
	Append    []accesslog.AppendField // format append's fields
	// Sampling writes only some entries (sampling); shared by the logs
	// that take it from one global logger, as they share its count.
	Sampling *accesslog.Sampling

	outputSet, formatSet, levelSet, samplingSet, empty bool
	// A global logger's include and exclude: http.log.access or
	// http.log.access.NAME.
	includes, excludes []string
}

// Options are the logger's accesslog options.
func (l *Log) Options() accesslog.Options {
	return accesslog.Options{Name: l.Name, Format: l.Format, Level: l.Level, Hostnames: l.Hostnames, Filters: l.Filters,
		Append: l.Append, Sampling: l.Sampling}
}

// DefaultLoggerName is the global log option without a name: Caddy's
// default logger.
const DefaultLoggerName = "default"

// globalLog reads the global log option: log [NAME] { output; format;
// level; include; exclude }.
func (p *parser) globalLog(d *caddyfile.Dispenser) {
	name := DefaultLoggerName
	args := d.RemainingArgs()
	switch {
	case len(args) == 1:
		name = args[0]
	case len(args) > 1:
		p.errf(d, "log: want at most a logger name, then a block")
	}
	if p.cfg.Loggers == nil {
		p.cfg.Loggers = map[string]*Log{}
	}
	l := p.logBlock(d, name, true)
	if prev := p.cfg.Loggers[name]; prev != nil {
		p.errAt(l.Pos, "log: duplicate global log option for %s (the first is at %s)", name, prev.Pos)
		return
	}
	p.cfg.Loggers[name] = l
	if name == DefaultLoggerName {
		p.cfg.Log = l
	}
}

// siteLog reads a site's log directive: log [NAME] { output; format;
// level; hostnames }.
func (p *parser) siteLog(s *Site, d *caddyfile.Dispenser) {
	args := d.RemainingArgs()
	name := ""
	switch {
	case len(args) == 1:
		name = args[0]
	case len(args) > 1:
		p.errf(d, "log: want at most a logger name, then a block")
	}
	l := p.logBlock(d, name, false)
	if l.Name == "" && !l.empty {
		l.Name = "log" + strconv.Itoa(p.logCounter)
		p.logCounter++
	}
	s.Logs = append(s.Logs, l)
}

// logBlock reads a log block, as Caddy's parseLogHelper.
func (p *parser) logBlock(d *caddyfile.Dispenser, name string, global bool) *Log {
	l := &Log{Pos: dpos(d), Name: name, empty: true}
	seen := map[string]bool{}
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		l.empty = false
		if seen[sub] && sub != "hostnames" && sub != "include" && sub != "exclude" {
			p.errf(d, "log: '%s' subdirective specified more than once in the same log block", sub)
		}
		seen[sub] = true
		switch sub {
		case "output":
			p.logOutput(d, l)
		case "format":
			p.logFormat(d, l)
		case "level":
			if v, ok := p.oneArg(d, "log: level", "DEBUG, INFO, WARN or ERROR"); ok {
				lv, err := accesslog.ParseLevel(v)
				if err != nil {
					p.errf(d, "log: level: %v", err)
				}
				l.Level, l.levelSet = lv, true
			}
		case "hostnames":
			if global {
				p.errf(d, "log: hostnames is not allowed in the log global options")
			}
			hs := d.RemainingArgs()
			if len(hs) == 0 {
				p.errf(d, "log: hostnames: want one or more host names")
			}
			l.Hostnames = append(l.Hostnames, hs...)
		case "include", "exclude":
			if !global {
				p.errf(d, "log: %s is not allowed in the log directive", sub)
				d.RemainingArgs()
				continue
			}
			// pollproxy's loggers carry access logs alone: a logger
			// takes the sites' logs its include and exclude let in, by
			// Caddy's rules (logAllowed).
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "log: %s: want one or more logger names, such as http.log.access", sub)
			}
			for _, v := range args {
				switch {
				case v != "http.log.access" && !strings.HasPrefix(v, "http.log.access."):
					p.errf(d, "log: %s %s is not supported by pollproxy (its loggers carry only access logs, http.log.access...)", sub, v)
				case sub == "include":
					l.includes = append(l.includes, v)
				default:
					l.excludes = append(l.excludes, v)
				}
			}
			if err := checkIncludeExclude(l.includes, l.excludes); err != nil {
				p.errf(d, "log: %v", err)
			}
		case "sampling":
			p.sampling(d, l)
		case "core", "no_hostname":
			p.errf(d, "log: %s is not supported by pollproxy", sub)
			d.RemainingArgs()
			skipBlock(d)
		default:
			p.errf(d, "log: unrecognized subdirective %s (want output, format, level, %s)", sub, map[bool]string{true: "include, exclude", false: "hostnames"}[global])
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	return l
}

// sampling reads sampling { interval D  first N  thereafter N }, with
// Caddy's defaults (1s, 100, 100) for what it leaves out. Words after
// sampling on its line are skipped, as Caddy skips them.
func (p *parser) sampling(d *caddyfile.Dispenser, l *Log) {
	d.RemainingArgs()
	var interval time.Duration
	var first, thereafter int
	seen := map[string]bool{}
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		if seen[sub] {
			p.errf(d, "log: '%s' specified more than once in the same sampling block", sub)
		}
		seen[sub] = true
		label := "log: sampling: " + sub
		switch sub {
		case "interval":
			if v, ok := p.oneArg(d, label, "a duration such as 1s"); ok {
				dur, err := parseDays(v)
				if err != nil {
					p.errf(d, "log: sampling: failed to parse interval: %v", err)
				}
				interval = dur
			}
		case "first", "thereafter":
			if v, ok := p.oneArg(d, label, "a number of entries"); ok {
				k, err := strconv.Atoi(v)
				if err != nil {
					p.errf(d, "log: sampling: failed to parse %s: %v", sub, err)
				}
				if sub == "first" {
					first = k
				} else {
					thereafter = k
				}
			}
		default:
			p.errf(d, "log: sampling: unrecognized subdirective %s (want interval, first, thereafter)", sub)
			d.RemainingArgs()
		}
	}
	l.Sampling, l.samplingSet = accesslog.NewSampling(interval, first, thereafter), true
}

// checkIncludeExclude is Caddy's check of a logger's include and
// exclude: they may not share a name, and with both, each included name
// must be inside or around an excluded one.
func checkIncludeExclude(include, exclude []string) error {
	if len(include) == 0 || len(exclude) == 0 {
		return nil
	}
	for _, in := range include {
		if slices.Contains(exclude, in) {
			return fmt.Errorf("include and exclude must not intersect, but found %s in both lists", in)
		}
	}
outer:
	for _, in := range include {
		for _, ex := range exclude {
			if strings.HasPrefix(in+".", ex+".") || strings.HasPrefix(ex+".", in+".") {
				continue outer
			}
		}
		return fmt.Errorf("when both include and exclude are populated, each element must be a superspace or subspace of one in the other list; check '%s' in include", in)
	}
	return nil
}

// logAllowed is Caddy's loggerAllowed: whether the entries of the logger
// named name (http.log.access, or http.log.access.NAME) go to a log
// with include and exclude. The longest matching namespace decides;
// with an include list, something in it must match.
func logAllowed(name string, include, exclude []string) bool {
	if len(include) == 0 && len(exclude) == 0 {
		return true
	}
	name += "."
	accept, reject := 0, 0
	for _, ns := range include {
		if strings.HasPrefix(name, ns+".") && len(ns) > accept {
			accept = len(ns)
		}
	}
	if len(include) > 0 && accept == 0 {
		return false
	}
	for _, ns := range exclude {
		if strings.HasPrefix(name, ns+".") && len(ns) > reject {
			reject = len(ns)
		}
	}
	if reject > accept {
		return false
	}
	return accept > reject || len(include) == 0 && reject == 0
}

// logOutput reads output stdout|stderr|discard|file PATH { ... }, and
// pollproxy's older output PATH.
func (p *parser) logOutput(d *caddyfile.Dispenser, l *Log) {
	if !d.NextArg() {
		p.errf(d, "log: output: want stdout, stderr, discard or file PATH")
		return
	}
	l.outputSet = true
	kind := d.Val()
	switch kind {
	case "stdout", "stderr", "discard":
		l.Output = accesslog.Output{Kind: kind}
		if d.NextArg() {
			p.errf(d, "log: output %s takes no argument", kind)
			d.RemainingArgs()
		}
		if at, ok := openedBlock(d); ok {
			p.errAt(at, "log: output %s takes no block", kind)
		}
	case "file":
		p.fileOutput(d, l)
	case "net":
		p.errf(d, "log: output net is not supported by pollproxy (want stdout, stderr, discard or file)")
		d.RemainingArgs()
		skipBlock(d)
	default:
		if strings.ContainsAny(kind, "/.") && d.CountRemainingArgs() == 0 {
			// pollproxy's older spelling of a file: output PATH.
			l.Output = accesslog.Output{Kind: "file", File: kind}
			if at, ok := openedBlock(d); ok {
				p.errAt(at, "log: output %s: write output file %s { ... } for file options", kind, kind)
			}
			return
		}
		p.errf(d, "log: output %s is not supported by pollproxy (want stdout, stderr, discard or file PATH)", kind)
		d.RemainingArgs()
		skipBlock(d)
	}
}

// fileOutput reads Caddy's file writer: file PATH { mode; roll_disabled;
// roll_size; roll_uncompressed; roll_local_time; roll_keep; roll_keep_for }.
func (p *parser) fileOutput(d *caddyfile.Dispenser, l *Log) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		p.errf(d, "log: output file: want one file name")
		skipBlock(d)
		return
	}
	o := accesslog.Output{Kind: "file", File: args[0]}
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		label := "log: output file: " + sub
		switch sub {
		case "mode":
			if v, ok := p.oneArg(d, label, "an octal mode such as 0644"); ok {
				m, err := strconv.ParseUint(v, 8, 32)
				if err != nil || m > 0o7777 {
					p.errf(d, "%s: %q: want an octal mode such as 0644", label, v)
				}
				o.Roll.Mode = os.FileMode(m)
			}
		case "roll_disabled":
			p.noArgs(d, label)
			o.Roll.Disabled = true
		case "roll_size":
			if v, ok := p.oneArg(d, label, "a size such as 10MiB"); ok {
				n, err := parseSize(v)
				if err != nil || n < 0 {
					p.errf(d, "%s: %q: want a size such as 10MiB", label, v)
				}
				// Caddy rolls at whole MiB, rounding up.
				o.Roll.SizeMB = int(math.Ceil(float64(n) / (1 << 20)))
			}
		case "roll_uncompressed":
			p.noArgs(d, label)
			o.Roll.Uncompressed = true
		case "roll_compression":
			if v, ok := p.oneArg(d, label, "none or gzip"); ok {
				switch v {
				case "none":
					o.Roll.Uncompressed = true
				case "gzip":
				case "zstd":
					p.errf(d, "%s zstd is not supported by pollproxy (want none or gzip)", label)
				default:
					p.errf(d, "%s: %q: want none or gzip", label, v)
				}
			}
		case "roll_local_time":
			p.noArgs(d, label)
			o.Roll.LocalTime = true
		case "roll_keep":
			o.Roll.Keep = p.intArg(d, label, 0)
		case "roll_keep_for":
			if v, ok := p.oneArg(d, label, "a duration such as 720h or 30d"); ok {
				dur, err := parseDays(v)
				if err != nil || dur < 0 {
					p.errf(d, "%s: %q: want a duration such as 720h or 30d", label, v)
				}
				o.Roll.KeepDays = int(math.Ceil(dur.Hours() / 24))
			}
		case "roll_interval":
			if v, ok := p.oneArg(d, label, "a duration such as 24h"); ok {
				dur, err := parseDays(v)
				if err != nil || dur <= 0 {
					p.errf(d, "%s: %q: want a positive duration such as 24h or 1d", label, v)
				}
				o.Roll.Interval = dur
			}
		case "roll_at":
			args := splitArgs(d.RemainingArgs())
			if len(args) == 0 {
				p.errf(d, "%s: want one or more times of day, HH:MM", label)
			}
			for _, a := range args {
				if _, err := time.Parse("15:04", a); err != nil {
					p.errf(d, "%s: %q: want a time of day, HH:MM", label, a)
				}
			}
			o.Roll.At = append(o.Roll.At, args...)
		case "roll_minutes":
			args := splitArgs(d.RemainingArgs())
			if len(args) == 0 {
				p.errf(d, "%s: want one or more minutes past the hour, 0-59", label)
			}
			for _, a := range args {
				m, err := strconv.Atoi(a)
				if err != nil || m < 0 || m > 59 {
					p.errf(d, "%s: %q: want a minute past the hour, 0-59", label, a)
					continue
				}
				o.Roll.Minutes = append(o.Roll.Minutes, m)
			}
		case "dir_mode", "backup_time_format":
			p.errf(d, "%s is not supported by pollproxy", label)
			d.RemainingArgs()
			skipBlock(d)
		default:
			p.errf(d, "log: output file: unknown option %q (want mode, roll_disabled, roll_size, roll_uncompressed, roll_local_time, roll_keep, roll_keep_for)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	l.Output = o
}

// splitArgs splits arguments written with commas, as Caddy's roll_at and
// roll_minutes take them either way.
func splitArgs(args []string) []string {
	var out []string
	for _, a := range args {
		for _, p := range strings.Split(a, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// parseDays reads a duration as Caddy does, with its "d" for days.
func parseDays(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		return time.Duration(n * 24 * float64(time.Hour)), err
	}
	return time.ParseDuration(v)
}

// logFormat reads format json|console, and pollproxy's common.
func (p *parser) logFormat(d *caddyfile.Dispenser, l *Log) {
	if !d.NextArg() {
		p.errf(d, "log: format: want json, console or filter")
		return
	}
	v := d.Val()
	if args := d.RemainingArgs(); len(args) > 0 && v != "transform" {
		p.errf(d, "log: format %s: takes a block, not %q", v, args[0])
	}
	switch v {
	case "json", "console", "common":
		l.Format, l.formatSet = v, true
	case "filter":
		l.Format, l.formatSet = "json", true
		p.logFilter(d, l)
		return
	case "append":
		l.Format, l.formatSet = "json", true
		p.logAppend(d, l)
		return
	case "transform", "logfmt", "single_field":
		p.errf(d, "log: format %s is not supported by pollproxy (want json, console, filter or append)", v)
		skipBlock(d)
		return
	default:
		p.errf(d, "log: format: unknown format %q (want json, console or filter)", v)
	}
	for n := d.Nesting(); d.NextBlock(n); {
		p.errf(d, "log: format %s: %s is not supported by pollproxy", v, d.Val())
		d.RemainingArgs()
		skipBlock(d)
	}
}

// logFilter reads Caddy's filter format: format filter { wrap json|console
// FIELD FILTER ...  fields { FIELD FILTER ... } }, with the filters
// accesslog implements.
func (p *parser) logFilter(d *caddyfile.Dispenser, l *Log) {
	field := func() {
		path := d.Val()
		if !d.NextArg() {
			p.errf(d, "log: format filter: %s: want a filter (%s)", path, strings.Join(accesslog.FilterOps, ", "))
			return
		}
		f := accesslog.Filter{Field: path, Op: d.Val()}
		if err := accesslog.CheckFilterField(path); err != nil {
			p.errf(d, "log: format filter: %v", err)
			d.RemainingArgs()
			skipBlock(d)
			return
		}
		args := d.RemainingArgs()
		switch f.Op {
		case "delete", "hash":
			if len(args) > 0 {
				p.errf(d, "log: format filter: %s %s takes no argument", path, f.Op)
			}
		case "replace":
			if len(args) > 1 {
				p.errf(d, "log: format filter: %s replace: want one value", path)
			}
			if len(args) == 1 {
				f.Value = args[0]
			}
		case "regexp":
			if len(args) != 2 {
				p.errf(d, "log: format filter: %s regexp: want a pattern and a replacement", path)
				return
			}
			re, err := regexp.Compile(args[0])
			if err != nil {
				p.errf(d, "log: format filter: %s regexp: %v", path, err)
				return
			}
			f.Re, f.Value = re, args[1]
		case "ip_mask":
			f.V4, f.V6 = 32, 128
			p.ipMask(d, &f, args)
		case "cookie":
			if len(args) > 0 {
				p.errf(d, "log: format filter: %s cookie: want a block of replace NAME VALUE, hash NAME, delete NAME", path)
			}
			f.Cookies = p.cookieActions(d)
		case "rename", "query", "set_cookie":
			p.errf(d, "log: format filter: %s is not supported by pollproxy (want %s)", f.Op, strings.Join(accesslog.FilterOps, ", "))
			skipBlock(d)
			return
		default:
			p.errf(d, "log: format filter: unknown filter %q (want %s)", f.Op, strings.Join(accesslog.FilterOps, ", "))
			skipBlock(d)
			return
		}
		l.Filters = append(l.Filters, f)
	}
	for n := d.Nesting(); d.NextBlock(n); {
		switch d.Val() {
		case "wrap":
			if v, ok := p.oneArg(d, "log: format filter: wrap", "json or console"); ok {
				if v != "json" && v != "console" {
					p.errf(d, "log: format filter: wrap %s is not supported by pollproxy (want json or console)", v)
				}
				l.Format = v
			}
		case "fields":
			for m := d.Nesting(); d.NextBlock(m); {
				field()
			}
		default:
			field()
		}
	}
}

// logAppend reads Caddy's append format: format append { wrap json|console|filter {...}
// fields { NAME VALUE ... }  NAME VALUE ... }: the fields are added after
// each entry's own, a value read as Caddy reads it (a number or a
// boolean unless quoted), a placeholder of the environment or the system
// ({env.X}, {system.hostname}) filled in when the configuration loads.
func (p *parser) logAppend(d *caddyfile.Dispenser, l *Log) {
	field := func() {
		name := d.Val()
		if !d.NextArg() {
			p.errf(d, "log: format append: %s: want a value", name)
			return
		}
		value, err := appendValue(d.ScalarVal())
		if err != nil {
			p.errf(d, "log: format append: %s: %v", name, err)
		}
		if d.NextArg() {
			p.errf(d, "log: format append: %s: want one value", name)
			d.RemainingArgs()
		}
		l.Append = append(l.Append, accesslog.AppendField{Name: name, Value: value})
	}
	for n := d.Nesting(); d.NextBlock(n); {
		switch d.Val() {
		case "wrap":
			if !d.NextArg() {
				p.errf(d, "log: format append: wrap: want json, console or filter")
				continue
			}
			switch w := d.Val(); w {
			case "json", "console":
				l.Format = w
				if at, ok := openedBlock(d); ok {
					p.errAt(at, "log: format append: wrap %s: its options are not supported by pollproxy", w)
				}
			case "filter":
				p.logFilter(d, l)
			default:
				p.errf(d, "log: format append: wrap %s is not supported by pollproxy (want json, console or filter)", w)
				d.RemainingArgs()
				skipBlock(d)
			}
		case "fields":
			for m := d.Nesting(); d.NextBlock(m); {
				field()
			}
		default:
			field()
		}
	}
}

// appendValue is an append field's value as JSON, as zap writes what
// Caddy read: a string, an integer, a float or a boolean.
func appendValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(nil, int64(x), 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return json.Marshal(strconv.FormatFloat(x, 'f', -1, 64))
		}
		return strconv.AppendFloat(nil, x, 'f', -1, 64), nil
	case bool:
		return strconv.AppendBool(nil, x), nil
	}
	s, _ := v.(string)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && strings.Count(s, "{") == 1 {
		return globalPlaceholder(strings.Trim(s, "{}"))
	}
	return json.Marshal(s)
}

// globalPlaceholder is the value of one of Caddy's global placeholders
// that do not change while pollproxy runs; any other Caddy does not know
// is null, as in Caddy.
func globalPlaceholder(name string) ([]byte, error) {
	if env, ok := strings.CutPrefix(name, "env."); ok {
		return json.Marshal(os.Getenv(env))
	}
	switch name {
	case "system.hostname":
		h, _ := os.Hostname()
		return json.Marshal(h)
	case "system.slash":
		return json.Marshal(string(filepath.Separator))
	case "system.os":
		return json.Marshal(runtime.GOOS)
	case "system.arch":
		return json.Marshal(runtime.GOARCH)
	case "system.wd":
		wd, _ := os.Getwd()
		return json.Marshal(wd)
	}
	if strings.HasPrefix(name, "time.") || strings.HasPrefix(name, "file.") {
		return []byte("null"), fmt.Errorf("the placeholder {%s} is not supported by pollproxy (it has {env.*} and {system.*})", name)
	}
	return []byte("null"), nil
}

// cookieActions reads the cookie filter's block: replace NAME VALUE,
// hash NAME, delete NAME, in order.
func (p *parser) cookieActions(d *caddyfile.Dispenser) []accesslog.CookieAction {
	var out []accesslog.CookieAction
	for n := d.Nesting(); d.NextBlock(n); {
		a := accesslog.CookieAction{Op: d.Val()}
		args := d.RemainingArgs()
		want := 1
		switch a.Op {
		case "replace":
			want = 2
		case "hash", "delete":
		default:
			p.errf(d, "log: format filter: cookie: unrecognized subdirective %s (want replace, hash, delete)", a.Op)
			continue
		}
		if len(args) != want {
			p.errf(d, "log: format filter: cookie %s: want %s", a.Op, map[int]string{1: "a cookie name", 2: "a cookie name and a value"}[want])
			continue
		}
		a.Name = args[0]
		if want == 2 {
			a.Value = args[1]
		}
		out = append(out, a)
	}
	return out
}

// ipMask reads ip_mask [V4 [V6]] { ipv4 N  ipv6 N }.
func (p *parser) ipMask(d *caddyfile.Dispenser, f *accesslog.Filter, args []string) {
	bits := func(v string, max int) int {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > max {
			p.errf(d, "log: format filter: ip_mask: %q: want a prefix length 0-%d", v, max)
		}
		return n
	}
	if len(args) > 2 {
		p.errf(d, "log: format filter: ip_mask: want [IPV4_BITS [IPV6_BITS]]")
	}
	if len(args) > 0 {
		f.V4 = bits(args[0], 32)
	}
	if len(args) > 1 {
		f.V6 = bits(args[1], 128)
	}
	for n := d.Nesting(); d.NextBlock(n); {
		switch sub := d.Val(); sub {
		case "ipv4":
			if v, ok := p.oneArg(d, "log: format filter: ip_mask ipv4", "a prefix length"); ok {
				f.V4 = bits(v, 32)
			}
		case "ipv6":
			if v, ok := p.oneArg(d, "log: format filter: ip_mask ipv6", "a prefix length"); ok {
				f.V6 = bits(v, 128)
			}
		default:
			p.errf(d, "log: format filter: ip_mask: unknown option %q (want ipv4, ipv6)", sub)
			d.RemainingArgs()
		}
	}
}

// noArgs refuses arguments and a block after a flag option.
func (p *parser) noArgs(d *caddyfile.Dispenser, label string) {
	if d.NextArg() {
		p.errf(d, "%s takes no argument", label)
		d.RemainingArgs()
	}
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "%s takes no block", label)
	}
}

// resolveLogs gives each site log what it does not set itself: a named
// log takes the global logger of its name, any other the default
// logger's; what neither sets is Caddy's default (stderr, json, INFO).
func (p *parser) resolveLogs() {
	for _, s := range p.cfg.Sites {
		s.Logs = p.included(s.Logs)
		for _, l := range s.Logs {
			from := p.cfg.Log
			if g := p.cfg.Loggers[l.Name]; g != nil && l.Name != "" {
				from = g
			}
			if from != nil {
				if !l.outputSet && from.outputSet {
					l.Output = from.Output
				}
				if !l.formatSet && from.formatSet {
					l.Format, l.Filters, l.Append = from.Format, from.Filters, from.Append
				}
				if !l.levelSet && from.levelSet {
					l.Level = from.Level
				}
				if !l.samplingSet && from.samplingSet {
					l.Sampling = from.Sampling
				}
			}
			if l.Output.Kind == "" {
				l.Output.Kind = "stderr"
			}
			if l.Format == "" {
				l.Format = "json"
			}
		}
	}
}

// included adds, for each site log, a log to every global logger whose
// include and exclude let its entries in (Caddy's logger
// http.log.access.NAME, or http.log.access for a bare log): Caddy's way
// of writing one site's entries to several outputs. A log that sets no
// output of its own then writes only there, as Caddy's default logger
// excludes what another logger includes.
func (p *parser) included(logs []*Log) []*Log {
	var out []*Log
	for _, l := range logs {
		var extra []*Log
		logger := "http.log.access"
		if l.Name != "" {
			logger += "." + l.Name
		}
		for _, name := range sortedNames(p.cfg.Loggers) {
			g := p.cfg.Loggers[name]
			if name == l.Name || name == DefaultLoggerName || len(g.includes) == 0 || !logAllowed(logger, g.includes, g.excludes) {
				continue
			}
			extra = append(extra, &Log{Pos: l.Pos, Name: l.Name, Output: g.Output, Format: g.Format, Filters: g.Filters, Append: g.Append,
				Level: g.Level, Sampling: g.Sampling, Hostnames: l.Hostnames, outputSet: true, formatSet: g.formatSet, levelSet: true, samplingSet: true})
		}
		if len(extra) == 0 || l.outputSet || p.cfg.Loggers[l.Name] != nil {
			out = append(out, l)
		}
		out = append(out, extra...)
	}
	return out
}

func sortedNames(m map[string]*Log) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
