package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
)

func init() {
	addCommand("demo", "start a sample HTTP/1.1 app on loopback with pollproxy in front of it over HTTPS", runDemo)
}

// runDemo starts the sample app and the reverse proxy in front of it, so a
// newcomer sees pollproxy work with no app of their own.
func runDemo(args []string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sample app: %w", err)
	}
	go http.Serve(ln, sampleApp())
	fmt.Printf("sample app (plain HTTP/1.1): http://%s/\n", ln.Addr())
	args = append([]string{"--to", ln.Addr().String()}, args...)
	return runReverseProxy("demo", args, func(url, certPath string) {
		fmt.Printf("\nTry it:\n  curl --cacert %s %s\n  curl --cacert %s %secho -d 'hello'\n\nCtrl-C stops it.\n", certPath, url, certPath, url)
	})
}

// sampleApp shows what the origin receives from pollproxy: the protocol
// it speaks to the origin (HTTP/1.1) and the fields pollproxy adds.
func sampleApp() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "Hello from the sample app behind pollproxy.\n\n%s %s %s\nHost: %s\n", r.Method, r.URL.RequestURI(), r.Proto, r.Host)
		names := make([]string, 0, len(r.Header))
		for k := range r.Header {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
		}
	})
	return mux
}
