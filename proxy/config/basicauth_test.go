package config

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/site"
)

// A bcrypt hash of "secret" (cost 4), made for these tests.
const testHash = "$2a$04$f3y4o.xtBePnEoTK6X857em6Bmfvm8IfK9ecIrlK2/xHtKAa/yooq"

// TestBasicAuthParse: both names, Caddy's arguments, the hash forms, and
// Caddy's directive order (after uri, before request_header and handle,
// whatever the file's order).
func TestBasicAuthParse(t *testing.T) {
	t.Setenv("POLLPROXY_TEST_HASH", testHash)
	c := mustParse(t, `localhost {
	handle /x {
		respond "x"
	}
	request_header X-A 1
	basic_auth /admin/* {
		alice `+testHash+`
		bob `+base64.StdEncoding.EncodeToString([]byte(testHash))+`
		{env.POLLPROXY_TEST_HASH_USER}carol {env.POLLPROXY_TEST_HASH}
	}
	basicauth bcrypt "My Realm" {
		dave `+testHash+`
	}
	uri strip_prefix /p
	reverse_proxy 127.0.0.1:8080
}
`)
	nodes := c.Sites[0].Routes.Nodes
	kinds := directives(nodes)
	want := []string{"*site.URI", "*site.BasicAuth", "*site.BasicAuth", "*site.EditRequest", "*site.Group", "*site.Proxy"}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
	old, cur := nodes[1].Do.(*site.BasicAuth), nodes[2].Do.(*site.BasicAuth)
	if old.Auth.Realm() != "My Realm" || nodes[1].Match != nil {
		t.Errorf("basicauth: realm %q, matcher %v", old.Auth.Realm(), nodes[1].Match)
	}
	if cur.Auth.Realm() != "restricted" || nodes[2].Match == nil {
		t.Errorf("basic_auth: realm %q, matcher %v", cur.Auth.Realm(), nodes[2].Match)
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		if h, known := cur.Auth.Lookup(u); !known || string(h) != testHash {
			t.Errorf("%s: %q %v", u, h, known)
		}
	}
}

func TestBasicAuthErrors(t *testing.T) {
	site := func(body string) string {
		return "localhost {\n" + body + "\n\treverse_proxy 127.0.0.1:8080\n}\n"
	}
	for _, tc := range []struct{ name, in, want string }{
		{"argon2id", site("\tbasic_auth argon2id {\n\t\talice x\n\t}"),
			"Caddyfile:2: basic_auth: argon2id is not supported by pollproxy (want bcrypt)"},
		{"unknown algorithm", site("\tbasic_auth md5 {\n\t}"),
			"Caddyfile:2: basic_auth: unrecognized hash algorithm: md5 (want bcrypt)"},
		{"too many arguments", site("\tbasicauth * bcrypt realm extra {\n\t}"),
			"Caddyfile:2: basicauth: want [matcher] [bcrypt [realm]] { username hashed_password ... }"},
		{"missing hash", site("\tbasic_auth {\n\t\talice\n\t}"),
			"Caddyfile:3: basic_auth: want one username and its hashed password on a line"},
		{"not a hash", site("\tbasic_auth {\n\t\talice hunter2\n\t}"),
			"Caddyfile:3: basic_auth: user alice: base64-decoding password"},
		{"duplicate user", site("\tbasic_auth {\n\t\talice " + testHash + "\n\t\talice " + testHash + "\n\t}"),
			"Caddyfile:4: basic_auth: username is not unique: alice"},
		{"placeholder", site("\tbasic_auth {\n\t\talice {file.hash}\n\t}"),
			"Caddyfile:3: basic_auth: placeholder {file.hash} is not supported by pollproxy"},
		{"request placeholder", site("\tbasic_auth {\n\t\t{host} " + testHash + "\n\t}"),
			`Caddyfile:3: basic_auth: placeholder in "{host}": only {env.*} is supported by pollproxy in an account`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
