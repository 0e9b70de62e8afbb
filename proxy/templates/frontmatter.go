package templates

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

// Document is splitFrontMatter's result: the front matter's fields and
// the body after it.
type Document struct {
	Meta map[string]any `json:"meta,omitempty"`
	Body string         `json:"body,omitempty"`
}

// fence is a kind of front matter: the line that opens it, the lines
// that may close it, and how its content is read.
type fence struct {
	open  string
	close []string
	parse func(string) (map[string]any, error)
}

var fences = []fence{
	{"---", []string{"---", "..."}, func(s string) (map[string]any, error) {
		m := map[string]any{}
		return m, yaml.Unmarshal([]byte(s), &m)
	}},
	{"+++", []string{"+++"}, func(s string) (map[string]any, error) {
		m := map[string]any{}
		return m, toml.Unmarshal([]byte(s), &m)
	}},
	{"{", []string{"}"}, func(s string) (map[string]any, error) {
		m := map[string]any{}
		return m, json.Unmarshal([]byte("{"+s+"}"), &m)
	}},
}

// splitFrontMatter separates a document's front matter (YAML between
// "---" lines, TOML between "+++", JSON between "{" and "}") from its
// body. The fence is the first line that is not blank; a document
// without one is all body.
func splitFrontMatter(input any) (Document, error) {
	s := toString(input)
	start, end := firstLine(s)
	first := strings.TrimSpace(s[start:end])
	for _, f := range fences {
		if first != f.open {
			continue
		}
		closeAt, closeLen := -1, 0
		for _, c := range f.close {
			if i := strings.Index(s[end:], "\n"+c); i >= 0 && (closeAt < 0 || i < closeAt) {
				closeAt, closeLen = i, len(c)
			}
		}
		if closeAt < 0 {
			return Document{}, errors.New("unterminated front matter")
		}
		closeAt += end + 1
		meta, err := f.parse(s[end:closeAt])
		if err != nil {
			return Document{}, err
		}
		return Document{Meta: meta, Body: s[closeAt+closeLen:]}, nil
	}
	return Document{Body: s}, nil
}

// firstLine finds the first line of s that is not blank and ends in a
// newline: [start, end) without the newline. Lines are counted as Caddy
// counts them, from one newline to the next.
func firstLine(s string) (start, end int) {
	blank := true
	for i, r := range s {
		if r != '\n' {
			blank = blank && unicode.IsSpace(r)
			continue
		}
		start = end
		if start > 0 {
			start++
		}
		end = i
		if !blank {
			break
		}
	}
	return start, end
}
