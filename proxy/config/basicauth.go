package config

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/auth"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// basicAuth reads Caddy's basic_auth (or its older name basicauth):
//
//	basic_auth [<matcher>] [<hash_algorithm> [<realm>]] {
//		<username> <hashed_password>
//		...
//	}
//
// The hash is bcrypt's, in Modular Crypt Format or base64-encoded, as
// Caddy reads it; without accounts every request is refused, as in Caddy.
func (p *parser) basicAuth(d *caddyfile.Dispenser, n *site.Node, name string) {
	args := d.RemainingArgs()
	realm, bcrypt := "", true
	switch len(args) {
	case 0:
	case 1, 2:
		switch args[0] {
		case "bcrypt":
		case "argon2id":
			p.errf(d, "%s: argon2id is not supported by pollproxy (want bcrypt)", name)
			bcrypt = false
		default:
			p.errf(d, "%s: unrecognized hash algorithm: %s (want bcrypt)", name, args[0])
			bcrypt = false
		}
		if len(args) == 2 {
			realm = args[1]
		}
	default:
		p.errf(d, "%s: want [matcher] [bcrypt [realm]] { username hashed_password ... }", name)
	}
	var accounts []auth.Account
	seen := map[string]bool{}
	for nest := d.Nesting(); d.NextBlock(nest); {
		user, rest := d.Val(), d.RemainingArgs()
		if !bcrypt { // said once, on the directive's line
			continue
		}
		if len(rest) != 1 {
			p.errf(d, "%s: want one username and its hashed password on a line", name)
			continue
		}
		user, ok1 := p.envValue(d, name, user)
		hashText, ok2 := p.envValue(d, name, rest[0])
		if !ok1 || !ok2 {
			continue
		}
		hash, err := auth.ParseHash(hashText)
		if err != nil {
			p.errf(d, "%s: user %s: %v", name, user, err)
			continue
		}
		if seen[user] {
			p.errf(d, "%s: username is not unique: %s", name, user)
			continue
		}
		seen[user] = true
		accounts = append(accounts, auth.Account{User: user, Hash: hash})
	}
	a, err := auth.NewBasicAuth(realm, accounts)
	if err != nil {
		p.errf(d, "%s: %v", name, err)
		return
	}
	n.Do = &site.BasicAuth{Auth: a, Unauthorized: site.Unauthorized(a)}
}

// envValue fills the {env.NAME} placeholders of an account's token, the
// ones Caddy fills when it loads accounts; a placeholder that needs a
// request is not supported by pollproxy there. ({$NAME} is the lexer's
// and already filled.)
func (p *parser) envValue(d *caddyfile.Dispenser, directive, s string) (string, bool) {
	return p.literal(d, directive, s, "placeholder in %q: only {env.*} is supported by pollproxy in an account")
}

// literal reads a token that must be known at load: {env.*} is filled,
// another placeholder is an error with refusal (a format taking s).
func (p *parser) literal(d *caddyfile.Dispenser, directive, s, refusal string) (string, bool) {
	t, err := route.ParseTemplate(s, route.TemplateOptions{})
	if err != nil {
		p.errf(d, "%s: %v", directive, err)
		return "", false
	}
	v, ok := t.Literal()
	if !ok {
		p.errf(d, "%s: "+refusal, directive, s)
	}
	return v, ok
}
