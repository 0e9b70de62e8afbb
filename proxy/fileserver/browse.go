package fileserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Browse is file_server's browse, as Caddy names its options: a listing
// of a directory that has no index file.
type Browse struct {
	RevealSymlinks bool
	// Sort and Order are the directive's sort (name, namedirfirst, size
	// or time) and order (asc or desc), "" when it sets none: the query's
	// sort and order come first.
	Sort, Order string
	// FileLimit is how many entries are read from the directory, at most,
	// in the directory's order (0: DefaultFileLimit).
	FileLimit int
	// PlainTimeFormat is the time layout of the text/plain listing ("":
	// Caddy's "January 2, 2006 at 15:04:05").
	PlainTimeFormat string
}

const (
	// DefaultFileLimit is Caddy's bound on the entries a listing reads.
	DefaultFileLimit = 10000
	// MaxFileLimit is the largest file_limit pollproxy takes: a listing
	// is built in memory, and this bounds it (some tens of MiB). Caddy
	// takes any limit, and a negative one as none.
	MaxFileLimit = 100000

	defaultPlainTimeFormat = "January 2, 2006 at 15:04:05"
)

// The sorts and orders Caddy knows.
const (
	SortName         = "name"
	SortNameDirFirst = "namedirfirst"
	SortSize         = "size"
	SortTime         = "time"
	OrderAsc         = "asc"
	OrderDesc        = "desc"
)

// listAsk is what a request asks of a listing, besides its path.
type listAsk struct {
	accept  string   // the Accept fields, joined with commas
	cookies []string // the Cookie fields
	query   string   // the query, after rewrites
	secure  bool     // arrived over TLS: the cookies set are Secure
	head    bool
}

// item is one entry of a listing, with Caddy's JSON names, in Caddy's
// order: the JSON listing is the items, as encoding/json writes them.
type item struct {
	Name        string      `json:"name"` // a directory's ends in "/"
	Size        int64       `json:"size"`
	URL         string      `json:"url"`
	ModTime     time.Time   `json:"mod_time"`
	Mode        os.FileMode `json:"mode"`
	IsDir       bool        `json:"is_dir"`
	IsSymlink   bool        `json:"is_symlink"`
	SymlinkPath string      `json:"symlink_path,omitempty"`

	lower string // Name in lower case, for the sorts by name
}

// listing is a directory's items and what the answer says of them.
type listing struct {
	items        []item
	lastModified time.Time // the newest of the directory and its items
	urlPath      string    // the request's path, escaped and cleaned
	dirs, files  int
	sort, order  string
}

// list answers a request for a directory without an index file: its
// listing, in the pool. dir is the directory, opened beneath the root.
func (s *Server) list(t target, c *conditions, dir *os.File, info os.FileInfo) *plan {
	defer dir.Close()
	// Caddy redirects to the trailing slash whatever
	// disable_canonical_uris says: the listing's links are relative.
	od, err1 := url2path(pathOnly(t.orig))
	cd, err2 := url2path(t.cur)
	if err1 == nil && err2 == nil && (t.cur == "" || path.Base(od) == path.Base(cd)) &&
		!strings.HasSuffix(od, "/") {
		if dec, err := url.PathUnescape(pathOnly(t.orig)); err == nil {
			return redirect(t, dec+"/", c.method)
		}
	}
	b := s.opt.Browse
	limit := b.FileLimit
	if limit == 0 {
		limit = DefaultFileLimit
	}
	entries, err := dir.ReadDir(limit)
	switch {
	case err == nil, err == io.EOF:
	case errors.Is(err, fs.ErrPermission):
		return failure(403, nil)
	case errors.Is(err, fs.ErrNotExist):
		return failure(404, nil)
	default:
		return failure(500, nil)
	}
	absRoot, err := filepath.Abs(t.root)
	if err != nil {
		return failure(500, nil)
	}
	l := s.read(t.root, absRoot, t.rel, dir.Name(), info.ModTime(), entries)
	l.urlPath = path.Clean(t.cur)

	vary := stream.Field{Name: "vary", Value: "Accept, Accept-Encoding"}
	if c.ifModified != "" {
		if since, err := http.ParseTime(c.ifModified); err == nil && l.lastModified.Truncate(time.Second).Compare(since) <= 0 {
			return &plan{status: 304, fields: []stream.Field{vary}}
		}
	}
	fields := []stream.Field{vary}
	fields = s.arrange(&l, t.list, fields)
	fields = append(fields, stream.Field{Name: "last-modified", Value: l.lastModified.Format(http.TimeFormat)})

	var body bytes.Buffer
	ctype := "text/html; charset=utf-8"
	switch accept := strings.ToLower(t.list.accept); {
	case strings.Contains(accept, "application/json"):
		if err := json.NewEncoder(&body).Encode(l.items); err != nil {
			return failure(500, nil)
		}
		ctype = "application/json; charset=utf-8"
	case strings.Contains(accept, "text/plain"):
		layout := b.PlainTimeFormat
		if layout == "" {
			layout = defaultPlainTimeFormat
		}
		if err := writePlain(&body, l.items, layout); err != nil {
			return failure(500, nil)
		}
		ctype = "text/plain; charset=utf-8"
	default:
		writeHTML(&body, &l)
		fields = append(fields, stream.Field{Name: "content-security-policy", Value: pageCSP})
	}
	fields = append(fields, stream.Field{Name: "content-type", Value: ctype},
		stream.Field{Name: "content-length", Value: strconv.Itoa(body.Len())})
	p := &plan{status: 200, fields: fields}
	if !t.list.head && body.Len() > 0 {
		p.first = body.Bytes()
	}
	return p
}

// read makes the items of a directory's entries: what is hidden is left
// out; a symbolic link is a directory when its target is one, and has
// its target's size, as long as the target is under the root.
func (s *Server) read(root, absRoot, rel, dirName string, dirMod time.Time, entries []os.DirEntry) listing {
	l := listing{items: make([]item, 0, len(entries)), lastModified: dirMod}
	for _, e := range entries {
		name := e.Name()
		if s.opt.Hide.hidden(path.Join(absRoot, rel, name)) {
			continue
		}
		info, err := e.Info()
		if err != nil { // gone since the directory was read
			continue
		}
		mod := info.ModTime()
		if l.lastModified.IsZero() || mod.After(l.lastModified) {
			l.lastModified = mod
		}
		it := item{Size: info.Size(), ModTime: mod.UTC(), Mode: info.Mode(), IsDir: e.IsDir(),
			IsSymlink: info.Mode()&os.ModeSymlink != 0}
		if it.IsSymlink {
			// A target that is not there, or not under the root, leaves
			// the link as it is: not a directory, its own size.
			if target, err := statBeneath(root, path.Join(rel, name)); err == nil {
				it.IsDir, it.Size = target.IsDir(), target.Size()
			}
			if s.opt.Browse.RevealSymlinks {
				if to, err := os.Readlink(filepath.Join(dirName, name)); err == nil {
					it.SymlinkPath = to
				}
			}
		}
		if it.IsDir {
			name += "/"
			l.dirs++
		} else {
			l.files++
		}
		it.Name = name
		// "./" first: a name with a colon is not read as a scheme.
		it.URL = (&url.URL{Path: "./" + name}).String()
		l.items = append(l.items, it)
	}
	l.lastModified = l.lastModified.UTC()
	return l
}

// arrange sorts and cuts the listing as the request and the directive
// ask, Caddy's way: the query's sort and order, else the directive's,
// else the cookies' (a sort or order the client chose is kept in a
// cookie), else namedirfirst asc. It returns fields with the cookies set.
func (s *Server) arrange(l *listing, ask *listAsk, fields []stream.Field) []stream.Field {
	sortBy, order := s.opt.Browse.Sort, s.opt.Browse.Order
	q, _ := url.ParseQuery(ask.query) // what parses, as Go's URL.Query
	if v := q.Get("sort"); v != "" {
		sortBy = v
	}
	if v := q.Get("order"); v != "" {
		order = v
	}
	cookie := func(name string) (string, bool) {
		r := http.Request{Header: http.Header{"Cookie": ask.cookies}}
		c, err := r.Cookie(name)
		if err != nil {
			return "", false
		}
		return c.Value, true
	}
	set := func(name, value string) {
		c := http.Cookie{Name: name, Value: value, Secure: ask.secure, HttpOnly: true, SameSite: http.SameSiteLaxMode}
		fields = append(fields, stream.Field{Name: "set-cookie", Value: c.String()})
	}
	switch sortBy {
	case "":
		sortBy = SortNameDirFirst
		if v, ok := cookie("sort"); ok {
			sortBy = v
		}
	case SortName, SortNameDirFirst, SortSize, SortTime:
		set("sort", sortBy)
	}
	switch order {
	case "":
		order = OrderAsc
		if v, ok := cookie("order"); ok {
			order = v
		}
	case OrderAsc, OrderDesc:
		set("order", order)
	}
	l.sort, l.order = sortBy, order
	sortItems(l.items, sortBy, order == OrderDesc)
	if v := q.Get("offset"); v != "" {
		if off, _ := strconv.Atoi(v); off > 0 {
			l.items = l.items[min(off, len(l.items)):]
		}
	}
	if v := q.Get("limit"); v != "" {
		if n, _ := strconv.Atoi(v); n > 0 && n <= len(l.items) {
			l.items = l.items[:n]
		}
	}
	return fields
}

// sortItems sorts by name (case-insensitively), namedirfirst (the same,
// directories first), size (directories first, by name) or time; a sort
// Caddy does not know leaves the directory's order. It is sort.Sort, not
// a stable sort, with Caddy's comparisons: items that compare equal come
// out in the order Caddy gives them.
func sortItems(items []item, by string, desc bool) {
	var less func(a, b *item) bool
	switch by {
	case SortName:
		less = func(a, b *item) bool { return a.lower < b.lower }
	case SortNameDirFirst:
		less = func(a, b *item) bool {
			if a.IsDir != b.IsDir {
				return a.IsDir
			}
			return a.lower < b.lower
		}
	case SortSize:
		less = func(a, b *item) bool {
			switch {
			case a.IsDir && b.IsDir:
				return a.lower < b.lower
			case a.IsDir || b.IsDir: // a directory is smaller than any file
				return a.IsDir
			}
			return a.Size < b.Size
		}
	case SortTime:
		less = func(a, b *item) bool { return a.ModTime.Before(b.ModTime) }
	default:
		return
	}
	if by != SortTime {
		for i := range items {
			items[i].lower = strings.ToLower(items[i].Name)
		}
	}
	sort.Sort(byLess{items, less, desc})
}

// byLess sorts items by less, or by its reverse.
type byLess struct {
	items []item
	less  func(a, b *item) bool
	desc  bool
}

func (s byLess) Len() int      { return len(s.items) }
func (s byLess) Swap(i, j int) { s.items[i], s.items[j] = s.items[j], s.items[i] }
func (s byLess) Less(i, j int) bool {
	if s.desc {
		return s.less(&s.items[j], &s.items[i])
	}
	return s.less(&s.items[i], &s.items[j])
}
