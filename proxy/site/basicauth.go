package site

import (
	"strconv"

	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/auth"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// authStep is a basic_auth the request matched, how many response edits
// had matched before it, and the fields the immediate ones had set: its
// 401 carries only those, as in Caddy, where the directives after a
// failed basic_auth never run.
type authStep struct {
	n      *Node // its route: the answer when the step fails
	auth   *BasicAuth
	resp   int
	preset []stream.Field
}

// edits returns the response edits of the step's 401 out of all, e.
func (st *authStep) edits(e edits) edits {
	return edits{dirs: e.dirs[:st.resp], preset: st.preset}
}

// maxCached bounds a loop's remembered good credentials per site.
const maxCached = 256

// checks is one loop's side of a site's password checks: the good
// credentials it remembers, and the checks running in the pool, each
// with the requests waiting for it (a page's many requests carrying the
// same new credentials cost one comparison, not one each). The loop
// itself is the Handler's (Handler.loop).
type checks struct {
	pool    *offload.Pool // auth.Shared, taken on first use
	cache   *auth.Cache
	flights map[auth.Key][]*authWait
}

// Unauthorized returns basic_auth's answer to a request without good
// credentials, as Caddy's: 401, the challenge, no body.
func Unauthorized(a *auth.BasicAuth) *static.Handler {
	return static.NewResponse(401, []stream.Field{
		{Name: "www-authenticate", Value: a.Challenge()},
		{Name: "content-length", Value: "0"},
	}, nil)
}

// unauthorized answers a request basic_auth's route n refused. Caddy's
// authentication returns the 401 as an error, with its challenge set in
// the response header map: the site's error routes render it when it has
// them, the challenge kept; otherwise the answer is the bare 401.
func (h *Handler) unauthorized(n *BasicAuth, req *stream.Request, w stream.ResponseWriter) stream.Events {
	if _, ok := stream.Find[stream.ErrorRouter](w); ok {
		challenge := []stream.Field{{Name: "www-authenticate", Value: n.Auth.Challenge()}}
		if stream.RouteErrorFields(w, 401, "not authenticated", challenge) {
			return drain{w}
		}
	}
	return n.Unauthorized.Serve(req, w)
}

var busyBody = []byte("pollproxy: too many password checks at once; try again\n")

// busy answers a request whose check found the pool full.
var busy = Node{Do: &Respond{Status: 503, Static: static.NewResponse(503, []stream.Field{
	{Name: "content-type", Value: "text/plain; charset=utf-8"},
	{Name: "content-length", Value: strconv.Itoa(len(busyBody))},
	{Name: "retry-after", Value: "1"},
}, busyBody)}}

// matchedAuth records a basic_auth the request matched. The routes after
// it are evaluated at once, as if it passed: they only run if it does,
// and {http.auth.user.id} is then the user the credentials claim. So only
// the password checks wait, never the table's evaluation.
func (h *Handler) matchedAuth(n *Node, d *BasicAuth) {
	st := authStep{n: n, auth: d, resp: len(h.resp)}
	if len(h.preset) > 0 {
		st.preset = append([]stream.Field(nil), h.preset...)
	}
	h.auths = append(h.auths, st)
	if len(h.auths) > 1 {
		return
	}
	if user, _, ok := credentials(h.ctx.Req); ok {
		h.ctx.Req.AuthUser = user
	}
}

func credentials(req *stream.Request) (user, password string, ok bool) {
	v, ok := req.Get("authorization")
	if !ok {
		return "", "", false
	}
	return auth.Credentials(v)
}

// authenticate runs the request's basic_auth checks, in order, before its
// answer (term). Those the loop can decide are decided here: no
// credentials, or credentials this loop saw pass. The first that needs a
// comparison parks the request until the pool's answer comes back through
// the loop's task queue.
func (h *Handler) authenticate(term *Node, at *resumePoint, vars reqVars, req *stream.Request, w stream.ResponseWriter) stream.Events {
	user, pass, ok := credentials(req)
	if !ok {
		st := h.auths[0]
		return h.answer(st.n, nil, st.edits(h.edits()), vars, req, w)
	}
	for i, st := range h.auths {
		hash, known := st.auth.Auth.Lookup(user)
		if known && h.checks.cache != nil && h.checks.cache.Passed(auth.KeyOf(hash, pass)) {
			continue
		}
		a := &authWait{hold: hold{w: w}, h: h, req: req, term: term, at: at, user: user, pass: pass, vars: vars,
			steps: append([]authStep(nil), h.auths[i:]...), resp: h.edits().keep()}
		a.next()
		return a
	}
	return h.answer(term, at, h.edits(), vars, req, w)
}

// start asks the pool to compare a's password with hash, unless the same
// comparison is running already, its answer coming back through loop.
// It reports false when the pool is full.
func (c *checks) start(loop offload.Poster, k auth.Key, hash []byte, known bool, a *authWait) bool {
	if waiting, ok := c.flights[k]; ok {
		c.flights[k] = append(waiting, a)
		return true
	}
	if c.pool == nil {
		c.pool = auth.Shared()
	}
	pass := a.pass
	compare := func() bool { return auth.Compare(hash, pass) && known }
	if offload.Do(c.pool, loop, compare, func(good bool) { c.done(k, good) }) != nil {
		return false
	}
	if c.flights == nil {
		c.flights = map[auth.Key][]*authWait{}
	}
	c.flights[k] = []*authWait{a}
	return true
}

// done takes a comparison's answer, on the loop.
func (c *checks) done(k auth.Key, good bool) {
	waiting := c.flights[k]
	delete(c.flights, k)
	if good {
		if c.cache == nil {
			c.cache = auth.NewCache(maxCached)
		}
		c.cache.Pass(k)
	}
	for _, a := range waiting {
		a.checked(good)
	}
}

// authWait is a request parked while its password is compared off the
// loop, holding its body meanwhile (see hold).
type authWait struct {
	hold
	h          *Handler
	req        *stream.Request
	term       *Node        // the answer once every step passed
	at         *resumePoint // term's, when it hands the request on (forward_auth)
	steps      []authStep   // the steps not passed yet
	resp       edits        // the response edits matched
	vars       reqVars
	user, pass string
}

// next moves the request on from its first step not passed: past the
// steps this loop saw pass, to a comparison in the pool, or to its answer.
func (a *authWait) next() {
	c := &a.h.checks
	for len(a.steps) > 0 {
		st := a.steps[0]
		hash, known := st.auth.Auth.Lookup(a.user)
		if hash == nil { // no account at all: nothing to compare
			a.dispatch(st.n, st.edits(a.resp))
			return
		}
		k := auth.KeyOf(hash, a.pass)
		if known && c.cache != nil && c.cache.Passed(k) {
			a.steps = a.steps[1:]
			continue
		}
		if !c.start(a.h.loop, k, hash, known, a) {
			a.dispatch(&busy, st.edits(a.resp))
		}
		return
	}
	a.dispatch(a.term, a.resp)
}

// checked takes the answer of the comparison for the first step.
func (a *authWait) checked(good bool) {
	if a.gone || a.answered {
		return
	}
	if !good {
		st := a.steps[0]
		a.dispatch(st.n, st.edits(a.resp))
		return
	}
	a.steps = a.steps[1:]
	a.next()
}

// dispatch hands the request to its answer: n, with the response edits
// resp. Refused, it has no user: {http.auth.user.id} is Caddy's only once
// the credentials passed.
func (a *authWait) dispatch(n *Node, resp edits) {
	a.pass = ""
	var at *resumePoint
	if n != a.term {
		a.req.AuthUser = ""
	} else {
		at = a.at
	}
	a.handOver(a.h.answer(n, at, resp, a.vars, a.req, a.w))
}
