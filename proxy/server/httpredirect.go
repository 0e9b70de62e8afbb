package server

import (
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Caddy's http_redirect listener wrapper (Config.HTTPRedirect): a client
// that speaks plain HTTP to a TLS listener (http://host:443/) gets a 308
// to the same URL over https instead of a failed handshake, and the
// connection closes after it. The first five bytes tell, as Caddy tells
// them: a request line starting with one of the common methods cannot be
// a TLS record.

// looksLikeHTTP reports whether a connection's first five bytes start an
// HTTP request, by Caddy's list.
func looksLikeHTTP(b []byte) bool {
	switch string(b[:5]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// redirectHTTP turns a TLS connection whose first bytes, p, are plain
// HTTP into a cleartext HTTP/1.1 connection that answers the request
// with the redirect. Its TLS session, which had only seen those bytes,
// is dropped. It reports false when the connection went away.
func (c *conn) redirectHTTP(p []byte) bool {
	c.sess.Close()
	c.cleartext, c.hsStarted = true, true
	c.timer.Stop()
	c.timer = nil
	c.state = stateOpen
	r := &httpsRedirect{}
	r.conn = h1.NewServerConn(c, r, c.ls.srv.cfg.H1)
	c.proto = r.conn
	return c.feed(p)
}

// httpsRedirect answers a plain-HTTP request on a TLS listener: 308 to
// https://HOST/PATH, as Caddy builds it from the Host and the target.
type httpsRedirect struct {
	conn *h1.ServerConn
}

func (r *httpsRedirect) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	r.conn.Shutdown() // one answer, then the connection closes, as Caddy's
	return static.NewResponse(308, []stream.Field{
		{Name: "location", Value: "https://" + req.Authority + req.Path},
		{Name: "content-length", Value: "0"},
	}, nil).Serve(req, w)
}
