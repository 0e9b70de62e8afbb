package main

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// direct is a load against h itself on a real TLS listener (no pollproxy
// between): what the load's checks make of a good origin and a bad one.
func direct(t *testing.T, h http.Handler) *load {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	addr := strings.TrimPrefix(srv.URL, "https://")
	l := &load{base: srv.URL, addr: addr, tls: &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}},
		stop: time.Now().Add(time.Minute), timeout: 10 * time.Second, limit: 10 * time.Second}
	t.Cleanup(l.closeIdle)
	return l
}

func TestLoadAgainstOrigin(t *testing.T) {
	l := direct(t, origin("o1"))
	for _, proto := range []string{"h2", "h1"} {
		c := l.client(proto)
		for _, n := range []int64{0, 1, 100 << 10, 1 << 20} {
			l.get(c, "get "+proto, n, nil)
			l.upload(c, "upload "+proto, n)
			l.upload(c, "upload "+proto, n) // the odd ids without a length
		}
		l.sse(c, proto, 5)
		l.slow(c, proto)
	}
	l.wsSession(l.h1(), 3)
	if len(l.records) != 2*(4*3+1+5+1)+1+3 {
		t.Errorf("%d records", len(l.records))
	}
	for _, r := range l.records {
		if r.Err != "" || r.Corrupt || r.Origin != "o1" {
			t.Errorf("%+v", r)
		}
	}
}

// TestLoadSeesCorruption: a body of another pattern, an upload short of a
// byte, an SSE stream of another's events.
func TestLoadSeesCorruption(t *testing.T) {
	good := origin("o1")
	l := direct(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, id, n, _ := parsePath(r.URL.Path)
		switch kind {
		case "get":
			r.URL.Path = "/get/" + strconv.FormatUint(id+1, 10) + "/" + strconv.FormatInt(n, 10)
		case "up":
			r.Body.Read(make([]byte, 1))
		case "sse":
			r.URL.Path = "/sse/" + strconv.FormatUint(id+1, 10) + "/" + strconv.FormatInt(n, 10)
		}
		good.ServeHTTP(w, r)
	}))
	c := l.h2()
	l.get(c, "get", 1000, nil)
	l.upload(c, "upload", 1000)
	l.sse(c, "h2", 2)
	if len(l.records) != 4 {
		t.Fatalf("%d records: %+v", len(l.records), l.records)
	}
	for _, r := range l.records {
		if !r.Corrupt {
			t.Errorf("not seen as corrupt: %+v", r)
		}
	}
}
