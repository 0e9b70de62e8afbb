package fileserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
)

// pageStyle is the listing page's style sheet, its one inline part.
const pageStyle = `body { font: 15px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 60em; padding: 0 1em; }
h1 { font-size: 1.3em; font-weight: 600; word-break: break-all; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: .3em .6em; text-align: left; }
th { border-bottom: 1px solid #8886; font-weight: 600; }
tr:hover td { background: #8881; }
td.size, th.size { text-align: right; white-space: nowrap; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
a { text-decoration: none; }
a:hover { text-decoration: underline; }
.link { opacity: .7; }
footer { margin-top: 1em; opacity: .7; font-size: .9em; }
`

// pageCSP is the page's Content-Security-Policy: nothing is loaded, and
// the one style sheet runs, by its hash (a page naming a file cannot
// smuggle in a script or a style of its own).
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
}()

// writePlain writes the text/plain listing as Caddy does: name, size in
// IEC units and modification time in layout, in right-aligned columns.
func writePlain(b *bytes.Buffer, items []item, layout string) error {
	w := tabwriter.NewWriter(b, 0, 8, 1, '\t', tabwriter.AlignRight)
	fmt.Fprintln(w, "Name\tSize\tModified")
	fmt.Fprintln(w, "----\t----\t--------")
	for _, it := range items {
		fmt.Fprintf(w, "%s\t%s\t%s\n", it.Name, humanize.IBytes(uint64(it.Size)), it.ModTime.Format(layout))
	}
	return w.Flush()
}

// writeHTML writes pollproxy's own listing page: self-contained (no
// script, no outside asset), the path, a link up, and a row per item
// with its name linked, its size and its modification time (UTC). Every
// name and path is escaped; links are the items' URLs, already
// percent-encoded, and relative, since the page's path ends in "/".
func writeHTML(b *bytes.Buffer, l *listing) {
	shown, _ := url.PathUnescape(l.urlPath)
	if shown == "" {
		shown = "/"
	}
	if !strings.HasSuffix(shown, "/") {
		shown += "/"
	}
	title := html.EscapeString(shown)
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Index of `)
	b.WriteString(title)
	b.WriteString(`</title>
<style>
`)
	b.WriteString(pageStyle)
	b.WriteString(`</style>
</head>
<body>
<h1>Index of `)
	b.WriteString(title)
	b.WriteString("</h1>\n<table>\n<thead><tr>")
	for _, col := range []struct{ label, by, class string }{
		{"Name", SortName, ""}, {"Size", SortSize, "size"}, {"Modified", SortTime, ""},
	} {
		order := OrderAsc
		mark := ""
		if l.sort == col.by || col.by == SortName && l.sort == SortNameDirFirst {
			if l.order == OrderDesc {
				mark = " ↓"
			} else {
				order, mark = OrderDesc, " ↑"
			}
		}
		if col.class != "" {
			fmt.Fprintf(b, `<th class="%s">`, col.class)
		} else {
			b.WriteString("<th>")
		}
		fmt.Fprintf(b, `<a href="?sort=%s&amp;order=%s">%s</a>%s</th>`, col.by, order, col.label, mark)
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	if len(l.urlPath) > 1 {
		b.WriteString("<tr><td><a href=\"../\">../</a></td><td class=\"size\"></td><td class=\"time\"></td></tr>\n")
	}
	for _, it := range l.items {
		fmt.Fprintf(b, `<tr><td><a href="%s">%s</a>`, html.EscapeString(it.URL), html.EscapeString(it.Name))
		if it.SymlinkPath != "" {
			fmt.Fprintf(b, ` <span class="link">→ %s</span>`, html.EscapeString(it.SymlinkPath))
		}
		size := "—"
		if !it.IsDir {
			size = humanize.IBytes(uint64(it.Size))
		}
		fmt.Fprintf(b, "</td><td class=\"size\">%s</td><td class=\"time\"><time datetime=\"%s\">%s</time></td></tr>\n",
			size, it.ModTime.Format("2006-01-02T15:04:05Z"), it.ModTime.Format("2006-01-02 15:04:05 UTC"))
	}
	fmt.Fprintf(b, "</tbody>\n</table>\n<footer>%d %s, %d %s</footer>\n</body>\n</html>\n",
		l.dirs, plural(l.dirs, "directory", "directories"), l.files, plural(l.files, "file", "files"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
