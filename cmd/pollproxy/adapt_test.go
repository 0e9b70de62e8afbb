package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdapt: adapt prints what pollproxy understood as JSON, the same
// bytes every time, and a bad Caddyfile's errors with their file:line.
func TestAdapt(t *testing.T) {
	bin := pollproxyBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte("{\n\tservers {\n\t\ttimeouts {\n\t\t\tidle 90s\n\t\t}\n\t}\n}\nexample.com {\n\t@api path /api/*\n\treverse_proxy @api 127.0.0.1:9000 127.0.0.1:9001 {\n\t\tlb_policy first\n\t}\n\trespond \"hi\"\n}\nhttp://other.example:8080 {\n\tredir https://example.com{uri}\n}\n"), 0o644)
	first, err := exec.Command(bin, "adapt", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := exec.Command(bin, "adapt", "--config", file).Output()
	if string(first) != string(again) {
		t.Errorf("two runs printed different bytes")
	}
	var doc struct {
		Listeners []struct {
			Listen    string
			Cleartext bool
			Sites     []struct{ Host, Site string }
		}
		Servers struct {
			Timeouts struct{ Idle string }
		}
		Sites []struct {
			Routes struct {
				Nodes []struct {
					Do    struct{ Type string }
					Match struct {
						Type     string
						Patterns []string
					}
				}
			}
			Proxies []struct {
				Upstreams []string
				Policy    string
			}
		}
	}
	if err := json.Unmarshal(first, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, first)
	}
	if len(doc.Listeners) != 2 || doc.Listeners[0].Listen != ":443" || doc.Listeners[1].Listen != ":8080" || !doc.Listeners[1].Cleartext ||
		doc.Listeners[0].Sites[0].Host != "example.com" || doc.Listeners[0].Sites[0].Site != file+":8" {
		t.Errorf("listeners: %+v", doc.Listeners)
	}
	if doc.Servers.Timeouts.Idle != "1m30s" {
		t.Errorf("servers: %+v", doc.Servers)
	}
	if len(doc.Sites) != 2 || len(doc.Sites[0].Routes.Nodes) != 2 || doc.Sites[0].Routes.Nodes[0].Do.Type != "site.Respond" ||
		doc.Sites[0].Routes.Nodes[1].Do.Type != "site.Proxy" || doc.Sites[0].Routes.Nodes[1].Match.Patterns[0] != "/api/*" ||
		doc.Sites[0].Proxies[0].Policy != "first" || len(doc.Sites[0].Proxies[0].Upstreams) != 2 {
		t.Errorf("sites: %+v", doc.Sites)
	}

	os.WriteFile(file, []byte("example.com {\n\treverse_proxy 127.0.0.1:1 {\n\t\tlb_policy fastest\n\t}\n}\n"), 0o644)
	out, err := exec.Command(bin, "adapt", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), file+":3: reverse_proxy: lb_policy") {
		t.Errorf("bad file: %v\n%s", err, out)
	}
}
