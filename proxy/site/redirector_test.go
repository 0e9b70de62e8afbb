package site

import (
	"fmt"
	"html"
	"testing"
)

// TestRedirectorHTML: redir's html page is Caddy's byte for byte (its
// layout, and the location HTML-escaped in all four places), so a client
// gets the same page from either server.
func TestRedirectorHTML(t *testing.T) {
	const caddyPage = "<!DOCTYPE html>\n<html>\n\t<head>\n\t\t<title>Redirecting...</title>\n" +
		"\t\t<script>window.location.replace(\"%s\");</script>\n" +
		"\t\t<meta http-equiv=\"refresh\" content=\"0; URL='%s'\">\n\t</head>\n" +
		"\t<body>Redirecting to <a href=\"%s\">%s</a>...</body>\n</html>\n"
	for _, loc := range []string{"/target", `/a?b=1&c="x"<'y'>`} {
		e := html.EscapeString(loc)
		if got, want := string(Redirector(301, loc, true).Body), fmt.Sprintf(caddyPage, e, e, e, e); got != want {
			t.Errorf("%q:\ngot  %q\nwant %q", loc, got, want)
		}
	}
}
