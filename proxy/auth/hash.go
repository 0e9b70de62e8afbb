package auth

import (
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// DefaultCost is the bcrypt cost Caddy's hash-password uses by default.
const DefaultCost = 14

// Hash returns the bcrypt hash of plaintext in Modular Crypt Format
// ("$2a$14$..."), as Caddy's hash-password prints it; a cost outside
// bcrypt's range is DefaultCost, as in Caddy.
func Hash(plaintext []byte, cost int) ([]byte, error) {
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		cost = DefaultCost
	}
	return bcrypt.GenerateFromPassword(plaintext, cost)
}

// ParseHash reads a hashed password as a Caddyfile gives it: a bcrypt
// hash in Modular Crypt Format ("$2a$", "$2b$" or "$2y$"), or that hash
// base64-encoded, which older Caddy versions printed and Caddy still
// accepts.
func ParseHash(s string) ([]byte, error) {
	h := []byte(s)
	if !strings.HasPrefix(s, "$") {
		var err error
		if h, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("base64-decoding password: %v", err)
		}
	}
	if len(h) > 0 && h[0] == '$' && !strings.HasPrefix(string(h), "$2") {
		return nil, fmt.Errorf("%.4s... is not a bcrypt hash (only bcrypt is supported by pollproxy)", h)
	}
	if _, err := bcrypt.Cost(h); err != nil {
		return nil, fmt.Errorf("not a bcrypt hash: %v", err)
	}
	return h, nil
}

// bcryptChecksum is the length of a bcrypt hash's last part, the
// encoded digest (after "$2a$CC$" and the 22 characters of salt).
const bcryptChecksum = 31

// decoy returns h with its digest replaced: comparing any password
// against it costs what comparing against h costs (the same version,
// cost and salt) and never succeeds, since no password hashes to an
// all-zero digest in practice.
func decoy(h []byte) []byte {
	d := append([]byte(nil), h...)
	for i := len(d) - bcryptChecksum; i < len(d); i++ {
		d[i] = '.'
	}
	return d
}
