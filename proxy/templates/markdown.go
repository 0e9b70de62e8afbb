package templates

import (
	"bytes"
	"fmt"

	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/yuin/goldmark"
	highlighting "github.com/yuin/goldmark-highlighting/v2"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// md is the markdown function's converter: GitHub-flavoured markdown,
// footnotes, code blocks highlighted with chroma's CSS classes, heading
// ids, raw HTML kept, as Caddy's.
var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM, extension.Footnote,
		highlighting.NewHighlighting(highlighting.WithFormatOptions(chromahtml.WithClasses(true)))),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
)

// markdown renders input (a string, or anything printed as Caddy prints
// a value) as HTML.
func markdown(input any) (string, error) {
	var buf bytes.Buffer
	if err := md.Convert([]byte(toString(input)), &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// toString prints a value as Caddy's ToString does for what a template
// passes: strings and byte slices as they are, others with fmt.
func toString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case fmt.Stringer:
		return v.String()
	case error:
		return v.Error()
	}
	return fmt.Sprintf("%+v", v)
}
