package route

import (
	"net/url"
	"strings"
)

// Query values are read one way everywhere (the query matcher, the
// {query.*} placeholders, lb_policy query): as url.ParseQuery reads a
// query for Caddy. Pairs are split on '&'; a key and a value are
// unescaped, '+' as a space; a pair holding ';' or a bad escape is
// skipped, and makes the query malformed.

// eachQueryPair calls fn with each pair of the raw query (no '?') that
// url.ParseQuery keeps, in order, until fn returns false. It reports
// whether the query is well formed: ParseQuery returns no error for it.
func eachQueryPair(raw string, fn func(key, value string) bool) (wellFormed bool) {
	wellFormed = true
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if strings.IndexByte(kv, ';') >= 0 {
			wellFormed = false
			continue
		}
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			wellFormed = false
			continue
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			wellFormed = false
			continue
		}
		if !fn(k, v) {
			return wellFormed
		}
	}
	return wellFormed
}

// AppendQueryValues appends the values of key in the raw query to dst,
// joined with ",", as Caddy's {http.request.uri.query.*} and its query
// load-balancing policy join them; found reports the key was there.
func AppendQueryValues(dst []byte, raw, key string) (out []byte, found bool) {
	eachQueryPair(raw, func(k, v string) bool {
		if k == key {
			if found {
				dst = append(dst, ',')
			}
			dst, found = append(dst, v...), true
		}
		return true
	})
	return dst, found
}
