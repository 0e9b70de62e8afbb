package auth

import (
	"encoding/base64"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// caddyPrinted is what "caddy hash-password --plaintext abc-def" printed
// for someone who published it (qiita.com/shooter/items/5978fe393217e25fccc3):
// the bcrypt string, as Caddy prints it since v2.8; older versions printed
// its base64.
const caddyPrinted = "$2a$14$VmyNOwSm1pXPdbOmvjOzOeNkcdrrH/pmcJRSi86EJgM5hvjWa17LO"

// TestCaddyHashForms: both forms Caddy printed read as the same hash, and
// it verifies the password Caddy hashed.
func TestCaddyHashForms(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte(caddyPrinted))
	for _, s := range []string{caddyPrinted, b64} {
		h, err := ParseHash(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if string(h) != caddyPrinted {
			t.Errorf("%s read as %q", s, h)
		}
	}
	if !Compare([]byte(caddyPrinted), "abc-def") {
		t.Error("Caddy's hash does not verify its password")
	}
	for _, bad := range []string{"not a hash", "$apr1$salt$digest", base64.StdEncoding.EncodeToString([]byte("plain")), "$2a$14$short"} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("%q was read as a hash", bad)
		}
	}
}

// TestHashRoundTrip: Hash makes what bcrypt verifies, at the cost asked
// for, or Caddy's default outside bcrypt's range.
func TestHashRoundTrip(t *testing.T) {
	h, err := Hash([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword(h, []byte("pw")) != nil {
		t.Errorf("%s does not verify", h)
	}
	if c, _ := bcrypt.Cost(h); c != bcrypt.MinCost {
		t.Errorf("cost %d, want %d", c, bcrypt.MinCost)
	}
}

// TestUnknownUser: a user without an account is compared against a decoy
// of the same cost and salt as an account's hash, which matches nothing —
// not even the account's own password.
func TestUnknownUser(t *testing.T) {
	h, _ := Hash([]byte("secret"), bcrypt.MinCost)
	a, err := NewBasicAuth("", []Account{{User: "alice", Hash: h}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Challenge() != `Basic realm="restricted"` {
		t.Errorf("challenge %q", a.Challenge())
	}
	got, known := a.Lookup("alice")
	if !known || string(got) != string(h) {
		t.Errorf("alice: %q %v", got, known)
	}
	d, known := a.Lookup("mallory")
	if known || len(d) != len(h) || string(d[:len(d)-bcryptChecksum]) != string(h[:len(h)-bcryptChecksum]) {
		t.Errorf("decoy %q for hash %q", d, h)
	}
	if Compare(d, "secret") {
		t.Error("the decoy matched a password")
	}
	if _, err := NewBasicAuth("", []Account{{User: "a", Hash: h}, {User: "a", Hash: h}}); err == nil {
		t.Error("a duplicate user was accepted")
	}
	empty, _ := NewBasicAuth("r", nil)
	if d, _ := empty.Lookup("anyone"); d != nil {
		t.Error("a directive without accounts compares")
	}
}

// TestCredentials: the Authorization field read as Go's net/http reads it.
func TestCredentials(t *testing.T) {
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		in         string
		user, pass string
		ok         bool
	}{
		{"Basic " + enc("alice:secret"), "alice", "secret", true},
		{"basic " + enc("alice:se:cret"), "alice", "se:cret", true},
		{"Basic " + enc("alice:"), "alice", "", true},
		{"Basic " + enc("alice"), "", "", false},
		{"Bearer " + enc("alice:secret"), "", "", false},
		{"Basic !!!", "", "", false},
		{"Basic", "", "", false},
	} {
		u, p, ok := Credentials(c.in)
		if u != c.user || p != c.pass || ok != c.ok {
			t.Errorf("%q: %q %q %v, want %q %q %v", c.in, u, p, ok, c.user, c.pass, c.ok)
		}
	}
}

// TestCacheBound: the cache keeps at most its size, and what it keeps
// passes.
func TestCacheBound(t *testing.T) {
	c := NewCache(16)
	h := []byte("$2a$04$abcdefghijklmnopqrstuu0123456789012345678901234567890")
	var keys []Key
	for i := range 100 {
		k := KeyOf(h, string(rune('a'+i%26))+string(rune('A'+i/26)))
		keys = append(keys, k)
		c.Pass(k)
		if len(c.good) > 16 {
			t.Fatalf("%d entries, want at most 16", len(c.good))
		}
	}
	if !c.Passed(keys[99]) || c.Passed(KeyOf(h, "other")) {
		t.Error("the last good check is not remembered, or another one is")
	}
}
