package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/fileserver"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// TestFileServerBrowse: file_server's browse in the forms Caddy 2.11.9
// accepts, read into the listing's options.
func TestFileServerBrowse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *fileserver.Browse
	}{
		{"off", "\tfile_server", nil},
		{"line", "\tfile_server browse", &fileserver.Browse{}},
		{"matcher", "\tfile_server /files/* browse", &fileserver.Browse{}},
		{"named matcher", "\t@f path /files/*\n\tfile_server @f browse", &fileserver.Browse{}},
		{"block", "\tfile_server {\n\t\tbrowse\n\t}", &fileserver.Browse{}},
		{"line and options", "\tfile_server browse {\n\t\thide .git\n\t}", &fileserver.Browse{}},
		{"options", "\tfile_server {\n\t\tbrowse {\n\t\t\treveal_symlinks\n\t\t\tsort size desc\n\t\t\tfile_limit 500\n\t\t\tplain_time_format \"2006-01-02 15:04\"\n\t\t}\n\t}",
			&fileserver.Browse{RevealSymlinks: true, Sort: "size", Order: "desc", FileLimit: 500, PlainTimeFormat: "2006-01-02 15:04"}},
		{"sort by only", "\tfile_server {\n\t\tbrowse {\n\t\t\tsort time\n\t\t}\n\t}", &fileserver.Browse{Sort: "time"}},
		{"sort split over lines", "\tfile_server {\n\t\tbrowse {\n\t\t\tsort name\n\t\t\tsort asc\n\t\t}\n\t}", &fileserver.Browse{Sort: "name", Order: "asc"}},
		{"file_limit 0 is the default", "\tfile_server {\n\t\tbrowse {\n\t\t\tfile_limit 0\n\t\t}\n\t}", &fileserver.Browse{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("Caddyfile", []byte("localhost {\n\troot * /srv\n"+tc.in+"\n}\n"))
			if err != nil {
				t.Fatal(err)
			}
			var got *fileserver.Browse
			found := false
			for _, n := range c.Sites[0].Routes.Nodes {
				if fs, ok := n.Do.(*site.FileServer); ok {
					got, found = fs.Files.Browse(), true
				}
			}
			if !found {
				t.Fatal("no file_server route")
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("browse %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFileServerBrowseRefused: what Caddy refuses, with its line, and
// what pollproxy does not support, said so rather than ignored.
func TestFileServerBrowseRefused(t *testing.T) {
	block := func(opts string) string {
		return "localhost {\n\tfile_server {\n\t\tbrowse {\n" + opts + "\n\t\t}\n\t}\n}\n"
	}
	for _, tc := range []struct{ name, in, want string }{
		{"template file", "localhost {\n\tfile_server {\n\t\tbrowse /srv/listing.html\n\t}\n}\n",
			"Caddyfile:3: file_server: browse /srv/listing.html: a template file is not supported by pollproxy"},
		{"template file with options", "localhost {\n\tfile_server {\n\t\tbrowse listing.html {\n\t\t\tsort size\n\t\t}\n\t}\n}\n",
			"Caddyfile:3: file_server: browse listing.html: a template file is not supported by pollproxy"},
		{"twice", "localhost {\n\tfile_server browse {\n\t\tbrowse\n\t}\n}\n", "Caddyfile:3: file_server: browsing is already configured"},
		{"two arguments", "localhost {\n\tfile_server /a browse list\n}\n", `Caddyfile:2: file_server: want [matcher] [browse], not "browse"`},
		{"not browse", "localhost {\n\tfile_server list\n}\n", `Caddyfile:2: file_server: want [matcher] [browse], not "list"`},
		{"sort unknown", block("\t\t\tsort largest"), "Caddyfile:4: file_server: browse: unknown sort option 'largest'"},
		{"sort order first", block("\t\t\tsort desc"), "Caddyfile:4: file_server: browse: sort: the first option must be one of name, namedirfirst, size, time, but got desc"},
		{"sort two bys", block("\t\t\tsort name size"), "Caddyfile:4: file_server: browse: sort: the second option must be one of asc, desc, but got size"},
		{"sort three", block("\t\t\tsort name asc desc"), "Caddyfile:4: file_server: browse: sort: only max 2 sort options are allowed, but got 3"},
		{"file_limit word", block("\t\t\tfile_limit many"), "Caddyfile:4: file_server: browse: file_limit should have an integer value"},
		{"file_limit none", block("\t\t\tfile_limit"), "Caddyfile:4: file_server: browse: file_limit should have an integer value"},
		{"file_limit twice", block("\t\t\tfile_limit 5\n\t\t\tfile_limit 6"), "Caddyfile:5: file_server: browse: file_limit is already enabled"},
		{"file_limit unbounded", block("\t\t\tfile_limit -1"), "Caddyfile:4: file_server: browse: file_limit -1 is not supported by pollproxy"},
		{"file_limit huge", block("\t\t\tfile_limit 100001"), "Caddyfile:4: file_server: browse: file_limit 100001 is not supported by pollproxy (want 0 to 100000"},
		{"reveal twice", block("\t\t\treveal_symlinks\n\t\t\treveal_symlinks"), "Caddyfile:5: file_server: browse: Symlinks path reveal is already enabled"},
		{"plain_time_format none", block("\t\t\tplain_time_format"), "Caddyfile:4: file_server: browse: plain_time_format is missing a time layout argument"},
		{"plain_time_format two", block("\t\t\tplain_time_format 2006 01"), "Caddyfile:4: file_server: browse: plain_time_format accepts exactly one time layout argument"},
		{"plain_time_format twice", block("\t\t\tplain_time_format 2006\n\t\t\tplain_time_format 01"), "Caddyfile:5: file_server: browse: plain_time_format is already set"},
		{"unknown", block("\t\t\tlayout grid"), "Caddyfile:4: file_server: browse: unknown subdirective 'layout'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant %s", err, tc.want)
			}
		})
	}
}
