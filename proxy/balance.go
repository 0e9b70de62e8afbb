package proxy

// Balancing is per loop: the cursor, the random state and the connection
// counts it compares are the loop's own, so picking an upstream costs no
// lock; only the upstream's health, shared by every loop, is an atomic
// read. The hashing policies are Caddy's hostByHashing: rendezvous
// hashing, each upstream scored by xxhash64 of its address followed by the
// key, highest first, so an upstream that goes down moves only its own
// keys, and a request goes to the upstream Caddy would send it to.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// Policy names a load-balancing policy, with Caddy's names.
type Policy string

// Load-balancing policies.
const (
	RoundRobin       Policy = "round_robin"
	LeastConnections Policy = "least_conn"
	First            Policy = "first"
	Random           Policy = "random"
	RandomChoose     Policy = "random_choose" // PolicyArg: how many to choose from (default 2)
	IPHash           Policy = "ip_hash"       // the peer's address
	ClientIPHash     Policy = "client_ip_hash"
	URIHash          Policy = "uri_hash"
	HeaderHash       Policy = "header" // PolicyArg: the field; random without it
	QueryHash        Policy = "query"  // PolicyArg: the key; random without it
	Cookie           Policy = "cookie" // PolicyArg: the cookie's name (default lb)
	// WeightedRoundRobin cycles over Weights' slots; an upstream weighted
	// 0 is never picked.
	WeightedRoundRobin Policy = "weighted_round_robin"
)

// policies are the load-balancing policies, in the order error messages
// list them: the one table ValidPolicy and PolicyNames read.
var policies = []Policy{RoundRobin, LeastConnections, First, Random, RandomChoose, IPHash,
	ClientIPHash, URIHash, HeaderHash, QueryHash, Cookie, WeightedRoundRobin}

// ValidPolicy reports whether p names a known policy ("" is the default).
func ValidPolicy(p Policy) bool {
	return p == "" || slices.Contains(policies, p)
}

// PolicyNames lists the policies for error messages.
var PolicyNames = func() string {
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}()

// group is one loop's view of an upstream set: a pool per upstream and the
// balancer's state.
type group struct {
	pools  []*pool
	policy Policy
	next   int
	rnd    uint64
	choose int
	// cookies[i] is the cookie value naming pools[i] (cookie policy).
	cookies []string
	// weights[i] is pools[i]'s weight, total their sum
	// (weighted_round_robin).
	weights []int
	total   int
	// fallback picks when a hashing or cookie policy has no key.
	fallback Policy
}

// pickKey is what a hashing policy knows about the request: the text
// Caddy hashes, or the address whose text it hashes (formatted only when
// picking, into a buffer on the stack).
type pickKey struct {
	text   string
	addr   netip.Addr // ip_hash, client_ip_hash
	hashed bool       // text or addr is set; otherwise the policy falls back
	cookie int        // the pool a cookie named, or -1
}

// key reads what the policy hashes from the request, as Caddy's policies
// read it: the peer's address; the client's; the request target; the
// field's first value (Host: the request's host); the key's decoded
// values joined with ","; the cookie, read as net/http reads it.
func (h *Handler) key(req *stream.Request) pickKey {
	g := &h.group
	k := pickKey{cookie: -1}
	switch g.policy {
	case IPHash:
		k.addr, k.hashed = req.RemoteAddr.Addr().Unmap(), true
	case ClientIPHash:
		k.addr, k.hashed = h.clientAddr(req).Unmap(), true
	case URIHash:
		k.text, k.hashed = req.Path, true
	case HeaderHash:
		if h.cfg.PolicyArg == "Host" && req.Authority != "" {
			k.text, k.hashed = req.Authority, true
		} else if v, ok := req.Get(h.cfg.PolicyArg); ok && v != "" {
			k.text, k.hashed = v, true
		}
	case QueryHash:
		if q := route.QueryOnly(req.Path); q != "" {
			if v, _ := route.AppendQueryValues(nil, q, h.cfg.PolicyArg); len(v) > 0 {
				k.text, k.hashed = string(v), true
			}
		}
	case Cookie:
		if v, ok := route.Cookie(req, h.cfg.PolicyArg, false); ok {
			for i, c := range g.cookies {
				if hmac.Equal([]byte(c), []byte(v)) {
					k.cookie = i
					break
				}
			}
		}
	}
	return k
}

// score is Caddy's hash of an upstream for a key: xxhash64 of the
// upstream's address (its dial address, as configured) and the key.
func (k *pickKey) score(p *pool) uint64 {
	var d xxhash.Digest
	d.Reset()
	d.WriteString(p.up.CaddyDial())
	if k.addr.IsValid() {
		var buf [64]byte
		d.Write(k.addr.AppendTo(buf[:0]))
	} else {
		d.WriteString(k.text)
	}
	return d.Sum64()
}

// clientIP is the client's address as the configured derivation sees it.
func (h *Handler) clientAddr(req *stream.Request) netip.Addr {
	if h.cfg.ClientIP != nil {
		return h.cfg.ClientIP(req)
	}
	return req.RemoteAddr.Addr()
}

// CookieValue is the value of the cookie policy's cookie for an upstream:
// hex HMAC-SHA256 of its address under secret, as Caddy computes it.
func CookieValue(secret, upstream string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(upstream))
	return hex.EncodeToString(m.Sum(nil))
}

func (g *group) random() uint64 {
	// xorshift64*: per loop, so no lock and no allocation.
	x := g.rnd
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	g.rnd = x
	return x * 2685821657736338717
}

// usable reports whether pools[i] may be picked in this pass.
func (g *group) usable(i int, pass int, now time.Time, skip *upstream.Upstream) bool {
	p := g.pools[i]
	if p.up == skip && len(g.pools) > 1 {
		return false
	}
	return pass == 1 || p.up.Healthy(now)
}

// pick chooses a pool among the healthy upstreams (all of them when none
// is healthy, so a full outage still gets tried rather than refused), never
// one listed in skip. It runs on the loop.
func (g *group) pick(now time.Time, skip *upstream.Upstream, k *pickKey) *pool {
	n := len(g.pools)
	for pass := 0; pass < 2; pass++ {
		if p := g.pickPass(pass, now, skip, k); p != nil {
			return p
		}
	}
	return g.pools[g.next%n]
}

func (g *group) pickPass(pass int, now time.Time, skip *upstream.Upstream, k *pickKey) *pool {
	n := len(g.pools)
	policy := g.policy
	switch policy {
	case IPHash, ClientIPHash, URIHash, HeaderHash, QueryHash:
		if !k.hashed {
			policy = g.fallback
		}
	case Cookie:
		if k.cookie >= 0 && g.usable(k.cookie, pass, now, skip) {
			return g.pools[k.cookie]
		}
		policy = g.fallback
	}
	switch policy {
	case IPHash, ClientIPHash, URIHash, HeaderHash, QueryHash:
		var best *pool
		var bestScore uint64
		for i, p := range g.pools {
			if !g.usable(i, pass, now, skip) {
				continue
			}
			if s := k.score(p); best == nil || s > bestScore {
				best, bestScore = p, s
			}
		}
		return best
	case Random, RandomChoose:
		choose := 1
		if policy == RandomChoose {
			choose = g.choose
		}
		var best *pool
		for c := 0; c < choose; c++ {
			start := int(g.random() % uint64(n))
			for i := 0; i < n; i++ {
				j := (start + i) % n
				if g.usable(j, pass, now, skip) {
					if p := g.pools[j]; best == nil || p.load() < best.load() {
						best = p
					}
					break
				}
			}
		}
		return best
	case LeastConnections:
		var best *pool
		for i := 0; i < n; i++ {
			j := (g.next + i) % n
			if g.usable(j, pass, now, skip) && (best == nil || g.pools[j].load() < best.load()) {
				best = g.pools[j]
			}
		}
		g.next = (g.next + 1) % n // spreads ties
		return best
	case First:
		for i := 0; i < n; i++ {
			if g.usable(i, pass, now, skip) {
				return g.pools[i]
			}
		}
		return nil
	case WeightedRoundRobin:
		return g.weighted(pass, now, skip)
	}
	for i := 0; i < n; i++ {
		j := (g.next + i) % n
		if g.usable(j, pass, now, skip) {
			g.next = (j + 1) % n
			return g.pools[j]
		}
	}
	return nil
}

// weighted picks as Caddy's weighted_round_robin does: the cursor's slot
// among the weights names the k-th weighted upstream, and the k-th (modulo
// their number) of the usable ones with a weight is picked, so an upstream
// that is down passes its turns to the next.
func (g *group) weighted(pass int, now time.Time, skip *upstream.Upstream) *pool {
	if len(g.weights) < 2 || g.total == 0 {
		return g.pools[0]
	}
	slot := g.next % g.total
	g.next++
	k := 0
	for _, w := range g.weights {
		if w == 0 {
			continue
		}
		if slot < w {
			break
		}
		slot -= w
		k++
	}
	usable := 0
	for i, w := range g.weights {
		if i < len(g.pools) && w > 0 && g.usable(i, pass, now, skip) {
			usable++
		}
	}
	if usable == 0 {
		return nil
	}
	k %= usable
	for i, w := range g.weights {
		if i < len(g.pools) && w > 0 && g.usable(i, pass, now, skip) {
			if k == 0 {
				return g.pools[i]
			}
			k--
		}
	}
	return nil
}
