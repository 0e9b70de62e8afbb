package auth

import (
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// defaultRealm is the realm Caddy names in its challenge.
const defaultRealm = "restricted"

// BasicAuth is one basic_auth directive: its realm and accounts. It is
// built once per (re)load and only read afterwards, by every loop.
type BasicAuth struct {
	realm    string
	accounts map[string][]byte
	// unknown is what a user who has no account is compared against, so
	// that the answer takes as long as for one who has (Caddy's
	// fakePassword): the first account's hash with its digest replaced,
	// which costs exactly what that account's comparison costs.
	unknown []byte
}

// Account is a user name and the bcrypt hash of its password.
type Account struct {
	User string
	Hash []byte
}

// NewBasicAuth returns the directive's checker; realm "" is defaultRealm.
// User names must be unique and not empty.
func NewBasicAuth(realm string, accounts []Account) (*BasicAuth, error) {
	if realm == "" {
		realm = defaultRealm
	}
	a := &BasicAuth{realm: realm, accounts: make(map[string][]byte, len(accounts))}
	for _, acct := range accounts {
		if acct.User == "" || len(acct.Hash) == 0 {
			return nil, fmt.Errorf("username and password cannot be empty or missing")
		}
		if _, dup := a.accounts[acct.User]; dup {
			return nil, fmt.Errorf("username is not unique: %s", acct.User)
		}
		a.accounts[acct.User] = acct.Hash
		if a.unknown == nil {
			a.unknown = decoy(acct.Hash)
		}
	}
	return a, nil
}

// Realm is the realm of the directive's challenge.
func (a *BasicAuth) Realm() string { return a.realm }

// Challenge is the WWW-Authenticate value of a 401, as Caddy writes it.
func (a *BasicAuth) Challenge() string { return `Basic realm="` + a.realm + `"` }

// Lookup returns the hash a password for user is compared against, and
// whether user has an account. For a user without one it is a decoy that
// costs the same to compare and never matches; nil when the directive has
// no account at all (then there is nothing to compare or to leak).
func (a *BasicAuth) Lookup(user string) (hash []byte, known bool) {
	if h, ok := a.accounts[user]; ok {
		return h, true
	}
	return a.unknown, false
}

// Compare reports whether password is the one hash was made from. It
// costs what bcrypt costs, tens of milliseconds or more: never call it on
// a loop (see Shared).
func Compare(hash []byte, password string) bool {
	return bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
}

// Credentials reads an Authorization field's Basic credentials as Go's
// net/http does (and so Caddy): the scheme without case, standard base64,
// the user before the first colon.
func Credentials(authorization string) (user, password string, ok bool) {
	const prefix = "Basic "
	if len(authorization) < len(prefix) || !strings.EqualFold(authorization[:len(prefix)], prefix) {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(authorization[len(prefix):])
	if err != nil {
		return "", "", false
	}
	user, password, ok = strings.Cut(string(b), ":")
	if !ok {
		return "", "", false
	}
	return user, password, true
}
