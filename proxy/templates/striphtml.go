package templates

import "strings"

// stripHTML removes the tags of s: what lies between '<' and '>' outside
// quoted attribute values; a '>' that closes nothing stays.
func stripHTML(s string) string {
	var b strings.Builder
	depth := 0
	var quote rune
	for _, r := range s {
		switch {
		case depth > 0 && quote == 0 && (r == '"' || r == '\''):
			quote = r
		case depth > 0 && r == quote:
			quote = 0
		case quote == 0 && r == '<':
			depth++
		case quote == 0 && r == '>':
			if depth > 0 {
				depth--
			} else {
				b.WriteRune(r)
			}
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
