package encodetest

import (
	"bytes"
	"fmt"
)

// Page returns an HTML page of a little over 20 KiB, a list of links as
// a typical page has: the response size encode is measured at.
func Page() []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html><html><head><title>encode</title></head><body><ul>\n")
	for i := 0; b.Len() < 20<<10; i++ {
		fmt.Fprintf(&b, "<li class=\"item\"><a href=\"/items/%d\">Item number %d</a> costs %d.%02d</li>\n", i, i, i*7%100, i%100)
	}
	b.WriteString("</ul></body></html>\n")
	return b.Bytes()
}
