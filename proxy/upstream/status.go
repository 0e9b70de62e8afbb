package upstream

import "strconv"

// ParseStatus reads a status as Caddy's health options write it
// (health_status, unhealthy_status): three digits from 100 to 599, or a
// class such as 5xx, returned as its digit (5).
func ParseStatus(s string) (int, bool) {
	if len(s) != 3 || s[0] < '1' || s[0] > '5' {
		return 0, false
	}
	if s[1:] == "xx" {
		return int(s[0] - '0'), true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 100 && n <= 599
}

// statusIs reports whether got is the status want, or in its class when
// want is a class digit (ParseStatus).
func statusIs(want, got int) bool { return want == got || want < 10 && got/100 == want }

func statusMatches(want string, got int) bool {
	code, _ := ParseStatus(want)
	return statusIs(code, got)
}
