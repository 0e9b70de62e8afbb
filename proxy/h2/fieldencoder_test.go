package h2

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestFieldEncoderDecodesWithXNet encodes random request heads (fields
// repeated from the last head in place or elsewhere, new values, values
// seen twice, sensitive ones, the origin's table size lowered now and
// then) and decodes every block with x/net's decoder, which must give the
// same fields back, block after block, as both dynamic tables evolve.
func TestFieldEncoderDecodesWithXNet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{":method", ":scheme", ":path", ":authority", "user-agent", "accept", "x-forwarded-for", "x-request-id", "authorization", "te", "content-type", "x-new"}
	for round := range 100 {
		e := newFieldEncoder(headerTableSize)
		var got []hpack.HeaderField
		dec := hpack.NewDecoder(headerTableSize, func(f hpack.HeaderField) { got = append(got, f) })
		var last []hpack.HeaderField
		for block := range 60 {
			if rng.IntN(15) == 0 {
				v := uint32(rng.IntN(headerTableSize + 1))
				e.setLimit(v)
				dec.SetAllowedMaxDynamicTableSize(min(v, headerTableSize))
			}
			var want []hpack.HeaderField
			for i := range 1 + rng.IntN(10) {
				var f hpack.HeaderField
				switch {
				case i < len(last) && rng.IntN(3) > 0:
					f = last[i]
				case len(last) > 0 && rng.IntN(4) == 0:
					f = last[rng.IntN(len(last))]
				default:
					f.Name = names[rng.IntN(len(names))]
					f.Value = fmt.Sprintf("v%d", rng.IntN(30))
					if rng.IntN(6) == 0 {
						f.Value = fmt.Sprintf("%0*d", rng.IntN(700), rng.IntN(10))
					}
					if f.Name == ":method" && rng.IntN(2) == 0 {
						f.Value = "GET"
					}
					f.Sensitive = f.Name == "authorization"
				}
				want = append(want, f)
			}
			e.begin()
			for _, f := range want {
				e.field(f.Name, f.Value, f.Sensitive)
			}
			got = got[:0]
			if _, err := dec.Write(e.out); err != nil {
				t.Fatalf("round %d block %d: x/net: %v", round, block, err)
			}
			if err := dec.Close(); err != nil {
				t.Fatalf("round %d block %d: x/net close: %v", round, block, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d block %d: decoded\n%v\nwant\n%v", round, block, got, want)
			}
			last = want
		}
	}
}

// TestFieldEncoderIndexesRepeats: a field sent twice goes into the table
// and is then one byte; one sent once stays out of it.
func TestFieldEncoderIndexesRepeats(t *testing.T) {
	e := newFieldEncoder(headerTableSize)
	head := func(path string) int {
		e.begin()
		e.field(":method", "POST", false)
		e.field(":path", path, false)
		e.field("user-agent", "grpc-go/1.85.0", false)
		return len(e.out)
	}
	first := head("/grpc.testing.TestService/UnaryCall")
	head("/grpc.testing.TestService/UnaryCall")
	third := head("/grpc.testing.TestService/UnaryCall")
	if third != 3 {
		t.Errorf("the third identical head is %d bytes, want 3 (one index each); the first was %d", third, first)
	}
	before := e.n
	for i := range 100 {
		head(fmt.Sprintf("/files/%d", i))
	}
	if e.n != before {
		t.Errorf("paths sent once each added %d table entries", e.n-before)
	}
}
