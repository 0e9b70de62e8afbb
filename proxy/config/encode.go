package config

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/encode"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// defaultEncodeMatch is encode's match when the directive has none:
// Caddy's compressible Content-Types, any status.
var defaultEncodeMatch = &route.ResponseMatch{Header: []route.HeaderField{{Name: "content-type", Values: encode.DefaultTypes}}}

// encode reads Caddy's encode:
//
//	encode [<matcher>] [<formats...>] {
//		gzip [<level>]
//		zstd [<level>] { level <level>; disable_checksum }
//		minimum_length <length>
//		match { status <code...>; header <field> [<value>] }
//	}
//
// The formats' order is the preference among those the client accepts
// equally: those in the block first, then those on the line, as in
// Caddy; a bare encode is "zstd gzip".
func (p *parser) encode(d *caddyfile.Dispenser, n *site.Node) {
	cfg := &encode.Config{MinLength: encode.DefaultMinLength, Match: defaultEncodeMatch}
	n.Do = &site.Encode{Config: cfg}
	at, line := dpos(d), d.RemainingArgs()
	add := func(f encode.Format, at Pos) {
		for _, g := range cfg.Formats {
			if g.Name == f.Name {
				p.errAt(at, "encode: %s is given twice", f.Name)
				return
			}
		}
		cfg.Formats = append(cfg.Formats, f)
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "minimum_length":
			v, ok := p.oneArg(d, "encode: minimum_length", "a length in bytes")
			if !ok {
				continue
			}
			l, err := strconv.ParseInt(v, 10, 64)
			if err != nil || l < 0 {
				p.errf(d, "encode: minimum_length %q: want a length in bytes", v)
				continue
			}
			if l > 0 { // 0 is Caddy's default
				cfg.MinLength = l
			}
		case "match":
			m := &route.ResponseMatch{}
			p.responseMatch(d, m, "encode")
			cfg.Match = m
		case encode.Gzip:
			if f, ok := p.gzipFormat(d); ok {
				add(f, dpos(d))
			}
		case encode.Zstd:
			if f, ok := p.zstdFormat(d); ok {
				add(f, dpos(d))
			}
		default:
			p.notEncoding(dpos(d), sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	if len(line) == 0 && len(cfg.Formats) == 0 {
		line = encode.DefaultFormats
	}
	for _, name := range line {
		if name != encode.Gzip && name != encode.Zstd {
			p.notEncoding(at, name)
			continue
		}
		add(encode.Format{Name: name}, at)
	}
}

// notEncoding reports a format pollproxy lacks: Caddy's plugins add br
// and others; stock Caddy has gzip and zstd.
func (p *parser) notEncoding(at Pos, name string) {
	if name == "br" {
		p.errAt(at, "encode: br is not supported by pollproxy (want gzip or zstd)")
		return
	}
	p.errAt(at, "encode: unknown encoding %q (want gzip or zstd)", name)
}

// gzipFormat reads gzip [<level>].
func (p *parser) gzipFormat(d *caddyfile.Dispenser) (encode.Format, bool) {
	f := encode.Format{Name: encode.Gzip}
	args := d.RemainingArgs()
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "encode: gzip takes no block")
	}
	switch len(args) {
	case 0:
	case 1:
		l, err := encode.ParseGzipLevel(args[0])
		if err != nil {
			p.errf(d, "encode: %v", err)
			return f, false
		}
		f.Level = l
	default:
		p.errf(d, "encode: gzip takes at most a level")
		return f, false
	}
	return f, true
}

// zstdFormat reads zstd [<level>] { level <level>; disable_checksum }.
func (p *parser) zstdFormat(d *caddyfile.Dispenser) (encode.Format, bool) {
	f := encode.Format{Name: encode.Zstd}
	ok := true
	level := func(s string) {
		if f.Level != 0 {
			p.errf(d, "encode: zstd: the level is given twice")
			ok = false
			return
		}
		l, err := encode.ParseZstdLevel(s)
		if err != nil {
			p.errf(d, "encode: %v", err)
			ok = false
			return
		}
		f.Level = l
	}
	switch args := d.RemainingArgs(); len(args) {
	case 0:
	case 1:
		level(args[0])
	default:
		p.errf(d, "encode: zstd takes at most a level")
		ok = false
	}
	checksum := false
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "level":
			if v, good := p.oneArg(d, "encode: zstd: level", "fastest, default, better or best"); good {
				level(v)
			}
		case "disable_checksum":
			if d.NextArg() || checksum {
				p.errf(d, "encode: zstd: disable_checksum takes no argument and is given once")
				ok = false
			}
			d.RemainingArgs()
			checksum, f.NoChecksum = true, true
		default:
			p.errf(d, "encode: zstd: unknown option %q (want level, disable_checksum)", sub)
			d.RemainingArgs()
			skipBlock(d)
			ok = false
		}
	}
	return f, ok
}
