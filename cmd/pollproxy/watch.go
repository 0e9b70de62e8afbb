package main

import (
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// watchInterval is how often run --watch looks at the files: Caddy's
// --watch looks once a second too.
const watchInterval = time.Second

// watchConfig is run --watch: it looks at the Caddyfile and every file
// it imports once a second and sends on changed when what they say
// changed (the reload goes through the same path as SIGHUP, which logs a
// bad file with its file:line and keeps the running configuration). A
// change of layout or comments alone reloads nothing, as in Caddy, where
// the adapted JSON is what is compared. Unlike Caddy's, the watch goes
// on after a bad file, so fixing it reloads. It returns when stop closes.
func watchConfig(file string, log *slog.Logger, changed chan<- struct{}, stop <-chan struct{}) {
	files, meaning := configMeaning(file)
	raw := readAll(files)
	log.Info("watching config file for changes", "config", file)
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := readAll(files)
		if bytes.Equal(now, raw) {
			continue
		}
		raw = now
		var m []byte
		files, m = configMeaning(file)
		// The set of imports may have changed with them.
		raw = readAll(files)
		if m != nil && bytes.Equal(m, meaning) {
			continue
		}
		meaning = m
		log.Info("config file changed; reloading", "config", file)
		select {
		case changed <- struct{}{}:
		case <-stop:
			return
		}
	}
}

// configMeaning parses file and returns the files its tokens come from
// (itself and its imports, sorted) and a digest of the tokens, which
// layout and comments do not change; with a file that does not parse,
// the file alone and a nil digest (any change then reloads, and the
// reload reports the error).
func configMeaning(file string) ([]string, []byte) {
	body, err := os.ReadFile(file)
	if err != nil {
		return []string{file}, nil
	}
	blocks, err := caddyfile.Parse(file, body)
	if err != nil {
		return []string{file}, nil
	}
	seen := map[string]bool{file: true}
	h := sha256.New()
	tok := func(t caddyfile.Token) {
		seen[t.File] = true
		io.WriteString(h, t.File)
		h.Write([]byte{0})
		io.WriteString(h, t.Text)
		h.Write([]byte{0})
	}
	for _, b := range blocks {
		for _, k := range b.Keys {
			tok(k)
		}
		h.Write([]byte{1})
		for _, seg := range b.Segments {
			for _, t := range seg {
				tok(t)
			}
			h.Write([]byte{2})
		}
	}
	// An imported file that is empty gave no token, and a glob may
	// match more files tomorrow: the import lines name them.
	for f := range seen {
		for _, imp := range importedFiles(f) {
			seen[imp] = true
		}
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	sort.Strings(files)
	return files, h.Sum(nil)
}

// importedFiles are the files file's import lines name, globs expanded,
// relative paths taken from file's directory as Caddy takes them.
func importedFiles(file string) []string {
	body, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	toks, err := caddyfile.Tokenize(body, file)
	if err != nil {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(toks); i++ {
		first := i == 0 || toks[i-1].Line != toks[i].Line
		if !first || toks[i].Text != "import" {
			continue
		}
		pattern := toks[i+1].Text
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(filepath.Dir(file), pattern)
		}
		matches, _ := filepath.Glob(pattern)
		out = append(out, matches...)
	}
	return out
}

// readAll is the files' contents, each with its name (a missing file
// reads as empty).
func readAll(files []string) []byte {
	var b bytes.Buffer
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.WriteString(f)
		b.WriteByte(0)
		b.Write(data)
		b.WriteByte(0)
	}
	return b.Bytes()
}
