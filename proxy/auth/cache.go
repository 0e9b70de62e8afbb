package auth

import (
	"crypto/rand"
	"crypto/sha256"
)

// cacheSalt keys the cache's digests to this process, so a memory image
// holds no digest anyone could have computed in advance.
var cacheSalt = func() [16]byte {
	var s [16]byte
	rand.Read(s[:])
	return s
}()

// Key identifies one check: the hash compared against and the password
// offered, as a salted SHA-256 digest, so the cache keeps no password.
type Key [sha256.Size]byte

// KeyOf returns the key of comparing password against hash.
func KeyOf(hash []byte, password string) Key {
	d := sha256.New()
	d.Write(cacheSalt[:])
	d.Write(hash) // a bcrypt hash has a fixed length: no separator needed
	d.Write([]byte(password))
	var k Key
	d.Sum(k[:0])
	return k
}

// Cache remembers the checks that passed, so a client sending the right
// credentials pays bcrypt once per loop, not on each request (Caddy
// caches too). A failed check is never remembered: it is never mistaken
// for a good one, and a client that keeps sending wrong passwords keeps
// paying a comparison in the Shared pool — or a 503 once it is full.
// A Cache belongs to one loop and takes no lock; its size is bounded.
type Cache struct {
	good map[Key]struct{}
	max  int
}

// NewCache returns a cache of at most max entries.
func NewCache(max int) *Cache {
	return &Cache{good: map[Key]struct{}{}, max: max}
}

// Passed reports whether the check k passed before.
func (c *Cache) Passed(k Key) bool {
	_, ok := c.good[k]
	return ok
}

// Pass records that k passed. When full, about an eighth of the entries
// go first, in the map's (unordered) iteration order, so eviction is
// rare and no client is favoured.
func (c *Cache) Pass(k Key) {
	if len(c.good) >= c.max {
		drop := max(1, c.max/8)
		for old := range c.good {
			delete(c.good, old)
			if drop--; drop == 0 {
				break
			}
		}
	}
	c.good[k] = struct{}{}
}
