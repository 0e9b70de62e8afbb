package config

import (
	"regexp"
	"strconv"
	"strings"
)

// Error is one problem in a Caddyfile.
type Error struct {
	Pos Pos
	Msg string
}

// Error implements error: "file:line: message".
func (e *Error) Error() string {
	if e.Pos.File == "" {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// Errors are every problem found in a Caddyfile, in file order.
type Errors []*Error

// Error implements error: one problem per line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// lexErrRE matches the Caddyfile package's "message, at file:line" form.
var lexErrRE = regexp.MustCompile(`^(?s)(.*), at (.+):(\d+)(?: import chain.*)?$`)

// lexLineRE matches the line a lexer error names in its message ("...
// heredoc marker on line #3 ..."): the lexer's errors carry no file and
// come from the file itself (an imported file's are wrapped, naming the
// import's line).
var lexLineRE = regexp.MustCompile(`on line #(\d+)`)

func lexError(filename string, err error) *Error {
	if m := lexErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[3])
		return &Error{Pos: Pos{m[2], line}, Msg: m[1]}
	}
	if m := lexLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Pos: Pos{filename, line}, Msg: err.Error()}
	}
	return &Error{Pos: Pos{File: filename}, Msg: err.Error()}
}
