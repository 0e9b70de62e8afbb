package route

import "fmt"

// CompileExpression compiles a CEL expression matcher.
func CompileExpression(src string) (Matcher, error) {
	return nil, fmt.Errorf("expression is not supported by pollproxy yet")
}
