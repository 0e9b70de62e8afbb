package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/pollproxy/pollproxy/proxy/encode"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// TestEncodeDirective: encode's forms read as Caddy reads them: the bare
// form, the formats' order (the block's first, then the line's), levels,
// minimum_length (0 is the default), match replacing the default types;
// and sorted into Caddy's directive order, after request_header and
// before handle.
func TestEncodeDirective(t *testing.T) {
	block := func(body string) string { return "localhost {\n" + body + "\n\treverse_proxy 127.0.0.1:8080\n}\n" }
	for _, tc := range []struct {
		name, in string
		formats  []encode.Format
		min      int64
		match    bool // a match of the directive's own
	}{
		{"bare", "\tencode", []encode.Format{{Name: "zstd"}, {Name: "gzip"}}, 512, false},
		{"line", "\tencode gzip", []encode.Format{{Name: "gzip"}}, 512, false},
		{"matcher", "\tencode /api/* gzip zstd", []encode.Format{{Name: "gzip"}, {Name: "zstd"}}, 512, false},
		{"block first", "\tencode zstd {\n\t\tgzip 6\n\t}", []encode.Format{{Name: "gzip", Level: 6}, {Name: "zstd"}}, 512, false},
		{"levels", "\tencode {\n\t\tzstd best\n\t\tgzip -3\n\t\tminimum_length 0\n\t}",
			[]encode.Format{{Name: "zstd", Level: int(zstd.SpeedBestCompression)}, {Name: "gzip", Level: -3}}, 512, false},
		{"zstd block", "\tencode {\n\t\tzstd {\n\t\t\tlevel fastest\n\t\t\tdisable_checksum\n\t\t}\n\t\tminimum_length 1024\n\t}",
			[]encode.Format{{Name: "zstd", Level: int(zstd.SpeedFastest), NoChecksum: true}}, 1024, false},
		{"match", "\tencode gzip {\n\t\tmatch {\n\t\t\tstatus 2xx\n\t\t\theader Content-Type text/*\n\t\t}\n\t}", []encode.Format{{Name: "gzip"}}, 512, true},
		{"match line", "\tencode gzip {\n\t\tmatch status 200\n\t}", []encode.Format{{Name: "gzip"}}, 512, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("Caddyfile", []byte(block(tc.in)))
			if err != nil {
				t.Fatal(err)
			}
			n := c.Sites[0].Routes.Nodes[0]
			enc, ok := n.Do.(*site.Encode)
			if !ok {
				t.Fatalf("first route is %T", n.Do)
			}
			e := enc.Config
			if !reflect.DeepEqual(e.Formats, tc.formats) || e.MinLength != tc.min {
				t.Errorf("formats %+v min %d, want %+v %d", e.Formats, e.MinLength, tc.formats, tc.min)
			}
			if own := e.Match != defaultEncodeMatch; own != tc.match {
				t.Errorf("own match %v, want %v", own, tc.match)
			}
		})
	}
	c, err := Parse("Caddyfile", []byte("localhost {\n\treverse_proxy 127.0.0.1:8080\n\thandle /x {\n\t\trespond 1\n\t}\n\tencode\n\trequest_header X 1\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := directives(c.Sites[0].Routes.Nodes)
	if want := []string{"*site.EditRequest", "*site.Encode", "*site.Group", "*site.Proxy"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("order %v, want %v", kinds, want)
	}
}

// TestEncodeErrors: what encode refuses, with its line.
func TestEncodeErrors(t *testing.T) {
	site := func(body string) string { return "localhost {\n" + body + "\n\treverse_proxy 127.0.0.1:8080\n}\n" }
	for _, tc := range []struct{ name, in, want string }{
		{"br", "\tencode br", `Caddyfile:2: encode: br is not supported by pollproxy`},
		{"br block", "\tencode {\n\t\tbr\n\t}", `Caddyfile:3: encode: br is not supported by pollproxy`},
		{"unknown", "\tencode deflate", `Caddyfile:2: encode: unknown encoding "deflate" (want gzip or zstd)`},
		{"twice", "\tencode gzip {\n\t\tgzip 5\n\t}", `Caddyfile:2: encode: gzip is given twice`},
		{"gzip level", "\tencode {\n\t\tgzip 10\n\t}", `Caddyfile:3: encode: gzip level 10: want -3 to 9`},
		{"gzip word", "\tencode {\n\t\tgzip fast\n\t}", `Caddyfile:3: encode: gzip level "fast": want a number from -3 to 9`},
		{"zstd level", "\tencode {\n\t\tzstd 3\n\t}", `Caddyfile:3: encode: zstd level "3": want fastest, default, better or best`},
		{"zstd level twice", "\tencode {\n\t\tzstd best {\n\t\t\tlevel fastest\n\t\t}\n\t}", `Caddyfile:4: encode: zstd: the level is given twice`},
		{"zstd option", "\tencode {\n\t\tzstd {\n\t\t\twindow 1MiB\n\t\t}\n\t}", `Caddyfile:4: encode: zstd: unknown option "window"`},
		{"min length", "\tencode {\n\t\tminimum_length -1\n\t}", `Caddyfile:3: encode: minimum_length "-1": want a length in bytes`},
		{"min length word", "\tencode {\n\t\tminimum_length 1KiB\n\t}", `Caddyfile:3: encode: minimum_length "1KiB": want a length in bytes`},
		{"match", "\tencode {\n\t\tmatch {\n\t\t\tpath /a\n\t\t}\n\t}", `Caddyfile:4: encode: match: unknown response matcher "path"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(site(tc.in)))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
