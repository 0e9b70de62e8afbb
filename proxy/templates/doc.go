// Package templates renders a response body as Caddy's templates
// directive does: Go's text/template with Caddy's template context (.Req,
// .OriginalReq, .Host, .RemoteIP, .ClientIP, .Cookie, .RespHeader, .Args)
// and functions (include, import, readFile, listFiles, fileExists,
// fileStat, placeholder, env, stripHTML, markdown, splitFrontMatter,
// humanize, httpError, maybe, pathEscape) with the sprig library.
//
// Rendering reads files and may take long, so it never runs on a loop:
// proxy/site hands the buffered body to an offload pool and writes the
// result when it comes back. Everything here runs on that pool's
// goroutines, on a copy of what the request and the response were.
//
// One job per file: render.go (Config, Input, Render and the result),
// context.go (the template context and Caddy's functions), frontmatter.go
// (splitFrontMatter's YAML, TOML and JSON front matter), markdown.go (the
// markdown function, highlighted with chroma) and striphtml.go
// (stripHTML).
package templates
