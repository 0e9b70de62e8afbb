package site

import (
	"regexp"

	"github.com/pollproxy/pollproxy/proxy/auth"
	"github.com/pollproxy/pollproxy/proxy/encode"
	"github.com/pollproxy/pollproxy/proxy/fileserver"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/templates"
)

// Table is one site's compiled routes, shared read-only by every loop.
type Table struct {
	Nodes []Node
	// Errors are the site's error routes (handle_errors): the errors its
	// handlers answer themselves re-enter them (errors.go).
	Errors []Node
	// Proxies is how many reverse proxies the routes reach.
	Proxies int
}

// Node is one compiled route: a matcher set and the directive it runs.
type Node struct {
	// Match is the route's matcher set; nil matches every request.
	Match route.Matcher
	// Exclusive is a group number (Caddy's route group): of the routes of
	// one list with the same non-zero number, only the first that matches
	// runs. handle, handle_path, rewrite and root are grouped this way.
	Exclusive int
	// Do is what the route does when it matches: a pointer to one of the
	// directive types below, which hold what that directive alone needs.
	Do Directive
}

// Directive is what a route does: one of the types of this file, one per
// routing directive. The evaluation switches on the type, as it would on
// a kind, and the case has the directive's fields at hand.
type Directive interface{ directive() }

// EditResponse edits the response's fields (the header directive, or
// copy_response_headers).
type EditResponse struct {
	Ops []route.HeaderOp
	// Match limits the edits to the responses it matches (header's
	// match block); nil: every response.
	Match *route.ResponseMatch
	// Immediate makes the directive Caddy's header without defer, a
	// deletion, >Field or match, or its copy_response_headers (CopyFrom):
	// its edits, but its ?Field defaults, go into the response's fields
	// as the routes reach it, so every answer carries them, error answers
	// included, and the handler's own fields join them as Caddy's
	// handlers fill its header map (preset.go). Otherwise the edits apply
	// when the head is written, to that head alone.
	Immediate bool
	// CopyFrom makes it copy_response_headers: the fields of the response
	// a handle_response matched, filtered.
	CopyFrom *HeaderFilter
}

// EditRequest edits the request's fields (request_header).
type EditRequest struct {
	Ops []route.HeaderOp
}

// Rewrite replaces the request target (rewrite).
type Rewrite struct {
	To route.Template
	// FileTarget puts {http.matchers.file.relative} before To (the
	// rewrite try_files makes).
	FileTarget bool
}

// URI edits the request path (uri strip_prefix, strip_suffix, replace,
// path_regexp, query).
type URI struct {
	Op byte // StripPrefix, StripSuffix, Replace, RegexpPath or EditQuery
	// Find is the prefix, suffix or search text; ReplBy Replace's and
	// RegexpPath's replacement.
	Find, ReplBy string
	Limit        int            // Replace: at most this many (0: all)
	Regexp       *regexp.Regexp // RegexpPath
	Query        *route.QueryOps
}

// URI operations.
const (
	StripPrefix byte = 'p'
	StripSuffix byte = 's'
	Replace     byte = 'r'
	RegexpPath  byte = 'x' // Regexp in the path, replaced by ReplBy
	EditQuery   byte = 'q' // the query edits in Query
)

// Redirect answers with a redirect (redir); terminal.
type Redirect struct {
	Status int
	To     route.Template
	HTML   bool // "html": a page that redirects
	// Static is the answer when To has no placeholders.
	Static *static.Handler
}

// Respond answers with a fixed response (respond); terminal.
type Respond struct {
	// Close closes the client connection after the answer (respond's
	// close).
	Close  bool
	Status int
	// StatusT is the status when a placeholder gives it
	// ({err.status_code}); StatusUnset: respond named no status, so an
	// error route's respond answers with the error's, as Caddy's does.
	StatusT     route.Template
	StatusUnset bool
	Body        route.Template
	// Static is the answer when the body has no placeholders.
	Static *static.Handler
}

// Abort resets the stream (abort); terminal.
type Abort struct{}

// Proxy hands the request to a reverse proxy (reverse_proxy); terminal.
type Proxy struct {
	// Index is the reverse proxy's in the Handler's list.
	Index int
	// Responses are its handle_response and replace_status, in order.
	Responses []ResponseHandler
}

// Group runs nested routes (handle, handle_path, route, handle_errors'
// blocks, try_files).
type Group struct {
	Strip    string // handle_path: the prefix removed first
	Children []Node
}

// BasicAuth lets a request on only with credentials that pass
// (basic_auth); otherwise Unauthorized answers 401 with the challenge.
type BasicAuth struct {
	Auth         *auth.BasicAuth
	Unauthorized *static.Handler
}

// SetRoot sets the root that file matchers and file_server use (root):
// Caddy's {http.vars.root}.
type SetRoot struct {
	Root string
}

// FileServer answers with a file (file_server); terminal.
type FileServer struct {
	Root  string // its own root ("": the request's)
	Files *fileserver.Server
}

// LogSkip leaves the request out of the access log (log_skip).
type LogSkip struct{}

// RequestBody bounds the request body a reverse proxy forwards
// (request_body).
type RequestBody struct {
	MaxBody int64 // max_size (0: no bound)
}

// ForwardAuth asks an auth service (the reverse proxy Proxy) about the
// request first (forward_auth): a 2xx lets it on to the routes after
// this one with Copy's fields; any other answer is the client's, unless
// Responses take it.
type ForwardAuth struct {
	URI       route.Template
	Proxy     int
	Copy      []CopyField
	Responses []ResponseHandler
}

// Error answers with an error (the error directive): Status, and the
// message, rendered by the site's error routes; Static is the bare status
// where there are none. Terminal.
type Error struct {
	Status  int
	Message route.Template
	Static  *static.Handler
}

// CopyResponse sends the origin response a handle_response matched
// (copy_response), with Status when not 0; terminal.
type CopyResponse struct {
	Status int
}

// Intercept watches the response of whatever answers the request
// (intercept): one its Responses match goes to their routes.
type Intercept struct {
	Responses []ResponseHandler
}

// SetMethod changes the request's method (method).
type SetMethod struct {
	Method string
}

// Encode compresses the response (encode).
type Encode struct {
	Config *encode.Config
}

// SetVars sets the request's variables (vars).
type SetVars struct {
	Ops []route.VarOp
}

// MapVars defines the placeholders of a map directive for the request
// (map): they are filled when read.
type MapVars struct {
	Map *route.Map
}

// Templates renders the response as a template (templates).
type Templates struct {
	Config *templates.Config
}

func (*SetVars) directive()      {}
func (*MapVars) directive()      {}
func (*Templates) directive()    {}
func (*EditResponse) directive() {}
func (*EditRequest) directive()  {}
func (*Rewrite) directive()      {}
func (*URI) directive()          {}
func (*Redirect) directive()     {}
func (*Respond) directive()      {}
func (*Abort) directive()        {}
func (*Proxy) directive()        {}
func (*Group) directive()        {}
func (*BasicAuth) directive()    {}
func (*SetRoot) directive()      {}
func (*FileServer) directive()   {}
func (*LogSkip) directive()      {}
func (*RequestBody) directive()  {}
func (*ForwardAuth) directive()  {}
func (*Error) directive()        {}
func (*CopyResponse) directive() {}
func (*Intercept) directive()    {}
func (*SetMethod) directive()    {}
func (*Encode) directive()       {}

// relays reports whether the terminal route n hands the request to
// another exchange first, which may hand it back (reenter.go).
func relays(n *Node) bool {
	switch d := n.Do.(type) {
	case *ForwardAuth:
		return true
	case *Proxy:
		return len(d.Responses) > 0
	}
	return false
}

// answerNode is a route made on the loop that answers with a, in one
// allocation for the node and its directive.
func answerNode(a *static.Handler) *Node {
	r := &struct {
		n Node
		d Respond
	}{d: Respond{Static: a}}
	r.n.Do = &r.d
	return &r.n
}
