package app

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"testing"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// adminAttackPage is a page that tries to switch the admin listener's
// pollers from its own origin, every way a script can: the requests a
// browser sends without asking (text/plain, a form type, a typeless Blob,
// no-cors) and a JSON one, which it sends only after a preflight. It
// writes each outcome into the DOM: the status the script could read,
// "opaque" for no-cors, "blocked" when the browser refused it the answer
// or refused to send it.
const adminAttackPage = `<!doctype html>
<html><body><pre id="out">PENDING</pre><script>
const admin = "http://%s/poller";
const body = JSON.stringify(%q);
const tries = [
	["text", {method: "POST", headers: {"Content-Type": "text/plain"}, body}],
	["form", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body}],
	["blob", {method: "POST", body: new Blob([body])}],
	["nocors", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}],
	["json", {method: "POST", headers: {"Content-Type": "application/json"}, body}],
];
(async () => {
	const out = [];
	for (const [name, opts] of tries) {
		try {
			const r = await fetch(admin, opts);
			out.push(name + "=" + (r.type === "opaque" ? "opaque" : r.status));
		} catch (e) {
			out.push(name + "=blocked");
		}
	}
	document.getElementById("out").textContent = "RESULT " + out.join(" ") + " END";
})();
</script></body></html>
`

var adminAttackResult = regexp.MustCompile(`RESULT (.*) END`)

// TestAdminFromBrowserPage: headless Chromium opens a page served from
// another origin (another port on 127.0.0.1) whose script tries to switch
// the pollers; the switch does not happen. With that page's origin listed
// in admin { origins }, the same script's JSON request passes its
// preflight and switches them, which shows the page really reaches the
// listener.
func TestAdminFromBrowserPage(t *testing.T) {
	chromium := testenv.Tool(t, "chromium", "chromium")
	// A browser per backend is the cost here: -short runs one.
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		pagePort := servertest.FreePort(t)
		t.Run("default", func(t *testing.T) {
			s := startAdminGuarded(t, backend, "")
			got := runAttackPage(t, chromium, s, pagePort)
			if want := "text=blocked form=blocked blob=blocked nocors=opaque json=blocked"; got != want {
				t.Errorf("the page saw %q, want %q", got, want)
			}
			if b := s.backend(); b != s.from {
				t.Fatalf("a page from another origin switched the poller from %s to %s (%s)", s.from, b, got)
			}
		})
		t.Run("origin allowed", func(t *testing.T) {
			if s := netpoll.Available(); len(s) < 2 {
				t.Skip("one poller backend here: a switch would not show")
			}
			s := startAdminGuarded(t, backend, fmt.Sprintf("\t\torigins 127.0.0.1:%%d http://127.0.0.1:%d", pagePort))
			got := runAttackPage(t, chromium, s, pagePort)
			// The unasked ones reach the guard and get its refusal, which
			// the allowed page may read; no-cors stays opaque.
			if want := "text=415 form=415 blob=415 nocors=opaque json=200"; got != want {
				t.Errorf("the page saw %q, want %q", got, want)
			}
			if b := s.backend(); b != s.to {
				t.Errorf("an allowed origin's JSON request left the poller on %s, want %s", b, s.to)
			}
		})
	})
}

// runAttackPage serves adminAttackPage on 127.0.0.1:pagePort, loads it in
// headless Chromium and returns what the page wrote.
func runAttackPage(t *testing.T, chromium string, s *adminSetup, pagePort int) string {
	t.Helper()
	page := fmt.Sprintf(adminAttackPage, s.admin, s.to)
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", pagePort), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})}
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	return dumpDOM(t, chromium, "http://"+srv.Addr+"/", adminAttackResult)
}
