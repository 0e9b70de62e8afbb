package oracle

// pendingDifference is a known difference between Caddy and pollproxy
// that is being fixed: the oracle tolerates it in the cases and fields
// named (globs: * matches anything) until the fix lands. A full run fails
// when no entry of one `what` tolerated anything any more, so the entries
// go with the fix.
type pendingDifference struct {
	what     string
	caseName string
	field    string
	// values, when set: globs of Caddy's and pollproxy's values, (none)
	// for a field one of them does not send.
	values [2]string
}

// pend is one entry: what, the case and field globs, and optionally
// globs of Caddy's and pollproxy's values.
func pend(what, caseName, field string, values ...string) pendingDifference {
	d := pendingDifference{what: what, caseName: caseName, field: field}
	copy(d.values[:], values)
	return d
}

// pending is the table the fixes empty. Case names are "SOURCE SITE
// PROTO REQUEST"; fields are "status", "body", "resp NAME" (a response
// field), "originN NAME", "originN request" (what the origin received).
var pending = []pendingDifference{
	// None today: every difference the oracle has shown is fixed, or is
	// one of the deliberate ones below. A new one goes here with the
	// case that shows it, until its fix lands.
}

// deliberate are the differences pollproxy keeps on purpose, case by
// case (the normalisations in compare_test.go are the others); each is
// in docs/caddyfile.md with its reason.
var deliberateDifferences = []pendingDifference{
	pend("a HEAD answer of pollproxy's own without a body says Content-Length: 0, the GET's length; Caddy's (Go's) says none", "* HEAD *", "resp content-length", "(none)", "0"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "caddydocs/intercept#* GET /accel", "resp *"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "caddydocs/intercept#* GET /status404", "*"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "generated2/* GET */status404", "resp *"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "generated2/* GET */status404", "body error"),
}
