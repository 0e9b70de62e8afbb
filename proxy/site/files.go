package site

import (
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/fastcgi"
	"github.com/pollproxy/pollproxy/proxy/fileserver"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// reqVars is what routing decided for a request besides its answer, kept
// with it while it waits (for a password check, for the disk): the root
// the root directive set, and the target before any rewrite (Caddy's
// original request, for file_server's canonical redirects).
type reqVars struct {
	root string
	orig string
	rem  string // {http.matchers.file.remainder}
}

// File is Caddy's file matcher: it matches when one of its candidate
// files exists under the root, and sets {http.matchers.file.relative} to
// it. The stat runs in fileserver's pool, never on the loop: a first
// pass over the routes learns which files the matchers ask about, and
// the routes run again once the pool has answered (see fileWait).
type File struct {
	// Root is the matcher's root; "" is the root directive's, or the
	// working directory.
	Root string
	// Try are the candidates (Caddy's try_files); empty is {path}.
	Try []route.Template
	// Policy is Caddy's try_policy: first_exist (""),
	// first_exist_fallback, largest_size, smallest_size,
	// most_recently_modified.
	Policy string
	// Split is Caddy's split_path: a candidate is cut after the first of
	// these (".php") that ends a path segment, the file is what comes
	// before, and {http.matchers.file.remainder} what comes after.
	// ASCII letters match without case; nothing else folds.
	Split []string
}

// fileKey is one candidate under one root: a stat for the file matcher,
// or, with server, whether that file_server finds something to serve
// (pass_thru).
type fileKey struct {
	root, rel string
	server    *fileserver.Server
}

// fileMemo is what a request learned of the disk: candidates found or
// not, and those a pass asked about that the pool must still look up.
type fileMemo struct {
	found   map[fileKey]fileserver.Found
	pending []fileKey
	scratch *[]byte // where candidates are expanded: the loop's
}

// ask adds k to what the pool must look up, once: php_fastcgi's two
// file matchers both ask about {path}/index.php.
func (m *fileMemo) ask(k fileKey) {
	for _, p := range m.pending {
		if p == k {
			return
		}
	}
	m.pending = append(m.pending, k)
}

// candidate is one try_files entry, expanded.
type candidate struct {
	key    fileKey
	dir    bool   // ended with "/": only a directory matches
	status int    // "=NNN": answer NNN
	ok     bool   // a path under the root at all
	rem    string // what split_path cut off
}

// defaultTry is try_files when a file matcher names none.
var defaultTry = []route.Template{mustParse("{path}")}

func mustParse(s string) route.Template {
	t, err := route.ParseTemplate(s, route.TemplateOptions{})
	if err != nil {
		panic(err)
	}
	return t
}

// Match implements Matcher.
func (m *File) Match(c *route.Ctx) bool {
	root := m.Root
	if root == "" {
		root = rootOr(c, ".")
	}
	try := m.Try
	if len(try) == 0 {
		try = defaultTry
	}
	// A matcher names a few candidates (php_fastcgi's: three); they stay
	// on the stack.
	var stack [4]candidate
	cands := stack[:0]
	memo := memoOf(c)
	for _, t := range try {
		cands = append(cands, expandCandidate(t, root, c.Req, m.Split, memo.scratch))
	}
	// Every candidate the policy may need and the pool has not looked
	// up yet goes to the pool at once, so one more pass decides.
	firstExist := m.Policy == "" || m.Policy == "first_exist" || m.Policy == "first_exist_fallback"
	unknown := false
	for i, cd := range cands {
		if firstExist && cd.status != 0 || m.Policy == "first_exist_fallback" && i == len(cands)-1 {
			break // what follows is never looked at
		}
		if _, ok := memo.found[cd.key]; cd.ok && !ok {
			memo.ask(cd.key)
			unknown = true
		}
	}
	if unknown {
		return false
	}
	pick := -1
	var best fileserver.Found
	for i, cd := range cands {
		switch m.Policy {
		case "", "first_exist", "first_exist_fallback":
			if cd.status != 0 {
				c.FailStatus = cd.status
				return true
			}
			if m.Policy == "first_exist_fallback" && i == len(cands)-1 {
				return matchedFile(c, cd)
			}
			if f := memo.found[cd.key]; cd.ok && f.Exists && f.Dir == cd.dir {
				return matchedFile(c, cd)
			}
			continue
		}
		f := memo.found[cd.key]
		if !cd.ok || !f.Exists {
			continue
		}
		better := pick < 0
		switch m.Policy {
		case "largest_size":
			better = f.Size > best.Size
		case "smallest_size":
			better = better || f.Size < best.Size
		case "most_recently_modified":
			better = better || f.Mod.After(best.Mod)
		}
		if better {
			pick, best = i, f
		}
	}
	if pick < 0 {
		return false
	}
	cd := cands[pick]
	cd.dir = best.Dir
	return matchedFile(c, cd)
}

// expandCandidate fills a try_files entry from the request and cleans it
// as file_server would.
// scratch is where it is filled before it is copied into a string.
func expandCandidate(t route.Template, root string, r *stream.Request, split []string, scratch *[]byte) candidate {
	raw, literal := t.Literal()
	if !literal {
		*scratch = t.Append((*scratch)[:0], r)
		raw = string(*scratch)
	}
	if len(raw) > 1 && raw[0] == '=' {
		if code := atoi3(raw[1:]); code >= 100 {
			return candidate{status: code}
		}
	}
	p, rem := route.PathOnly(raw), ""
	if len(split) > 0 {
		// Cut before the file is looked up, as Caddy does, on the
		// cleaned path (a trailing slash kept).
		cleaned := path.Clean(p)
		if strings.HasSuffix(p, "/") && !strings.HasSuffix(cleaned, "/") {
			cleaned += "/"
		}
		p, rem = fastcgi.FileSplit(cleaned, split)
	}
	rel, dir, err := fileserver.Clean(p)
	if err != nil {
		return candidate{}
	}
	cd := candidate{key: fileKey{root: root, rel: rel}, dir: dir, ok: true, rem: rem}
	switch {
	case rel == "":
		// Caddy joins "/" to the root without a trailing slash, and a
		// path without one must not be a directory: the root never
		// matches ("try_files {path} /" leaves "/sub" to file_server).
		cd.dir = false
	case dir && !strings.HasSuffix(t.String(), "/"):
		// Only an entry written with a trailing slash matches a
		// directory: "{path}" for "/dir/" matches nothing, and the next
		// entry ("{path}/index.php") is tried. The candidate still names
		// the path for first_exist_fallback's last entry.
		cd.dir, cd.ok = false, false
	}
	return cd
}

// atoi3 reads a status of three digits, or returns 0.
func atoi3(s string) int {
	if len(s) != 3 {
		return 0
	}
	n := 0
	for i := range 3 {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// matchedFile sets {http.matchers.file.relative}: the file's path from
// the root, with a trailing slash for a directory, escaped as a target.
func matchedFile(c *route.Ctx, cd candidate) bool {
	rel := "/" + cd.key.rel
	if cd.dir && cd.key.rel != "" {
		rel += "/"
	}
	c.FileRel = (&url.URL{Path: rel}).EscapedPath()
	c.FileRem = cd.rem
	abs := filepath.Join(firstOf(cd.key.root, "."), filepath.FromSlash(cd.key.rel))
	typ := "file"
	if cd.dir {
		abs, typ = abs+string(filepath.Separator), "directory"
	}
	c.Req.File = &stream.FileMatch{Relative: rel, Absolute: filepath.ToSlash(abs), Type: typ}
	return true
}

// rootOr is the root the root directive set for c's request, or def.
func rootOr(c *route.Ctx, def string) string {
	if c.Root != "" {
		return c.Root
	}
	return def
}

// memoOf is what c's file matchers learned of the disk so far, made on
// the first file matcher's first question.
func memoOf(c *route.Ctx) *fileMemo {
	m, _ := c.Files.(*fileMemo)
	if m == nil {
		m = &fileMemo{scratch: new([]byte)}
		c.Files = m
	}
	return m
}

// fileWait is a request whose file matchers wait for the pool. It keeps
// the request as it arrived, so that each pass runs the routes over the
// same request, and holds the body meanwhile as a password check does.
type fileWait struct {
	hold
	h        *Handler
	nodes    []Node // the routes the request runs through
	req      *stream.Request
	w        stream.ResponseWriter
	path     string
	header   []stream.Field
	authUser string
	memo     fileMemo
	passes   int
}

// maxFilePasses bounds the passes over a request's routes: each one
// looks up every candidate the last one asked about, so only file
// matchers that depend on other file matchers' rewrites need more than
// two.
const maxFilePasses = 4

// lookFiles parks the request while the pool stats what the routes asked
// about.
func (h *Handler) lookFiles(nodes []Node, req *stream.Request, w stream.ResponseWriter, orig string, header []stream.Field, user string) stream.Events {
	fw := &fileWait{h: h, nodes: nodes, req: req, w: w, path: orig, header: header, authUser: user,
		memo: fileMemo{found: map[fileKey]fileserver.Found{}}}
	fw.hold.w = w
	if !fw.look(memoOf(&h.ctx).pending) {
		return h.answer(filesBusy, nil, edits{}, reqVars{}, req, w)
	}
	return fw
}

// look asks the pool about keys; false when it is full.
func (fw *fileWait) look(keys []fileKey) bool {
	keys = append([]fileKey(nil), keys...)
	fw.passes++
	lookup := func() []fileserver.Found {
		found := make([]fileserver.Found, len(keys))
		var rels []string
		for i := 0; i < len(keys); {
			k := keys[i]
			if k.server != nil {
				found[i].Exists = k.server.Finds(k.root, k.rel)
				i++
				continue
			}
			// The file matchers' candidates under one root, looked up
			// together.
			rels = rels[:0]
			j := i
			for ; j < len(keys) && keys[j].server == nil && keys[j].root == k.root; j++ {
				rels = append(rels, keys[j].rel)
			}
			copy(found[i:j], fileserver.Lookup(k.root, rels))
			i = j
		}
		return found
	}
	done := func(found []fileserver.Found) { fw.looked(keys, found) }
	return offload.Do(fileserver.Shared(), fw.h.loop, lookup, done) == nil
}

// looked takes the pool's answer, on the loop, and runs the routes again.
func (fw *fileWait) looked(keys []fileKey, found []fileserver.Found) {
	if fw.gone {
		return
	}
	for i, k := range keys {
		fw.memo.found[k] = found[i]
	}
	h, r := fw.h, fw.req
	r.Path, r.Header, r.AuthUser = fw.path, fw.header, fw.authUser
	fw.memo.pending = fw.memo.pending[:0]
	n, vars := h.evaluate(fw.nodes, r, &fw.memo)
	if len(fw.memo.pending) > 0 {
		if fw.passes < maxFilePasses && fw.look(fw.memo.pending) {
			return
		}
		n = filesBusy
	}
	fw.handOver(h.finish(n, vars, r, fw.w))
}

// statusNode raises status as an error ("=404" in try_files), its code
// the message, as Caddy's file matcher does: handle_errors renders it,
// and without them it is the status with an empty body.
func statusNode(status int) *Node {
	code := strconv.Itoa(status)
	msg, _ := route.ParseTemplate(code, route.TemplateOptions{})
	e := &struct {
		n Node
		d Error
	}{d: Error{Status: status, Message: msg, Static: ErrorResponse(status)}}
	e.n.Do = &e.d // one allocation for the node and its directive
	return &e.n
}

// filesBusy answers a request whose file lookups found the pool full, as
// file_server does.
var filesBusy = &Node{Do: &Respond{Status: 503, Static: static.NewResponse(503, []stream.Field{
	{Name: "retry-after", Value: "1"},
	{Name: "content-length", Value: "0"},
}, nil)}}

// fileServerFinds reports whether the file_server n, whose pass_thru
// hands a request for a missing file on, has a file for the request; the
// first pass asks the pool, as a file matcher does.
func (h *Handler) fileServerFinds(n *FileServer) bool {
	root := n.Root
	if root == "" {
		root = rootOr(&h.ctx, ".")
	}
	rel, _, err := fileserver.Clean(route.PathOnly(h.ctx.Req.Path))
	if err != nil {
		return true // file_server answers 400
	}
	memo := memoOf(&h.ctx)
	k := fileKey{root: root, rel: rel, server: n.Files}
	if f, ok := memo.found[k]; ok {
		return f.Exists
	}
	memo.ask(k)
	return false
}
