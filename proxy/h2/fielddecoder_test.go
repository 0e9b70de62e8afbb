package h2

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// decodeBoth decodes blocks (each cut into fragments at cuts) with
// fieldDecoder and with x/net's hpack.Decoder, one decoder of each for
// the whole sequence, as a connection does, and returns what each
// emitted, block by block, with the error that ended a block.
func decodeBoth(blocks [][]byte, cuts func(n int) []int, maxString int) (ours, theirs []string) {
	var gotOurs, gotTheirs []hpack.HeaderField
	d := newFieldDecoder(4096, func(f hpack.HeaderField) { gotOurs = append(gotOurs, f) })
	x := hpack.NewDecoder(4096, func(f hpack.HeaderField) { gotTheirs = append(gotTheirs, f) })
	if maxString > 0 {
		d.SetMaxStringLength(maxString)
		x.SetMaxStringLength(maxString)
	}
	run := func(write func([]byte) (int, error), closeBlock func() error, got *[]hpack.HeaderField, out *[]string, block []byte) bool {
		*got = (*got)[:0]
		prev := 0
		for _, c := range append(cuts(len(block)), len(block)) {
			if _, err := write(block[prev:c]); err != nil {
				*out = append(*out, fmt.Sprintf("%v error", *got))
				return false
			}
			prev = c
		}
		if err := closeBlock(); err != nil {
			*out = append(*out, fmt.Sprintf("%v error", *got))
			return false
		}
		*out = append(*out, fmt.Sprint(*got))
		return true
	}
	okOurs, okTheirs := true, true
	for _, b := range blocks {
		if okOurs {
			okOurs = run(d.Write, d.Close, &gotOurs, &ours, b)
		}
		if okTheirs {
			okTheirs = run(x.Write, x.Close, &gotTheirs, &theirs, b)
		}
	}
	return ours, theirs
}

// TestFieldDecoderAgreesWithXNet encodes random heads with x/net's
// encoder (fields added to the table, evicted, never indexed, size
// updates) and decodes them, cut into fragments anywhere, with both
// decoders: the fields must be the same, block after block, as the
// dynamic tables evolve.
func TestFieldDecoderAgreesWithXNet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{":status", "date", "content-type", "etag", "server", "x-custom", "set-cookie", "grpc-status", "last-modified", "content-length"}
	for round := range 200 {
		var buf bytes.Buffer
		enc := hpack.NewEncoder(&buf)
		var blocks [][]byte
		for range 30 {
			buf.Reset()
			if rng.IntN(10) == 0 {
				enc.SetMaxDynamicTableSize(uint32(rng.IntN(4097)))
			}
			for range 1 + rng.IntN(12) {
				v := fmt.Sprintf("v%d", rng.IntN(40))
				if rng.IntN(8) == 0 {
					v = string(bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(600)))
				}
				enc.WriteField(hpack.HeaderField{Name: names[rng.IntN(len(names))], Value: v, Sensitive: rng.IntN(10) == 0})
			}
			blocks = append(blocks, bytes.Clone(buf.Bytes()))
		}
		cuts := func(n int) []int {
			var c []int
			for k := 1; k < n; k++ {
				if rng.IntN(8) == 0 {
					c = append(c, k)
				}
			}
			return c
		}
		ours, theirs := decodeBoth(blocks, cuts, 0)
		if !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("round %d: ours\n%v\nx/net\n%v", round, ours, theirs)
		}
		for _, b := range ours {
			if bytes.HasSuffix([]byte(b), []byte(" error")) {
				t.Fatalf("round %d: a block from x/net's encoder failed: %s", round, b)
			}
		}
	}
}

// TestFieldDecoderRFCExamples decodes RFC 7541's examples C.3 (requests
// without Huffman coding) and C.6 (responses with it, a 256-byte table
// that evicts), checking the fields and the table after each.
func TestFieldDecoderRFCExamples(t *testing.T) {
	hex := func(s string) []byte {
		var b []byte
		for i := 0; i+1 < len(s); i += 2 {
			for s[i] == ' ' {
				i++
			}
			var v byte
			fmt.Sscanf(s[i:i+2], "%02x", &v)
			b = append(b, v)
		}
		return b
	}
	type step struct {
		block  string
		fields string
		size   uint32
	}
	for _, c := range []struct {
		name  string
		table uint32
		steps []step
	}{
		{"C.3", 4096, []step{
			{"828684410f7777772e6578616d706c652e636f6d", "[:method: GET :scheme: http :path: / :authority: www.example.com]", 57},
			{"828684be58086e6f2d6361636865", "[:method: GET :scheme: http :path: / :authority: www.example.com cache-control: no-cache]", 110},
			{"828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565", "[:method: GET :scheme: https :path: /index.html :authority: www.example.com custom-key: custom-value]", 164},
		}},
		{"C.6", 256, []step{
			{"488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
				"[:status: 302 cache-control: private date: Mon, 21 Oct 2013 20:13:21 GMT location: https://www.example.com]", 222},
			{"4883640effc1c0bf", "[:status: 307 cache-control: private date: Mon, 21 Oct 2013 20:13:21 GMT location: https://www.example.com]", 222},
			{"88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
				"[:status: 200 cache-control: private date: Mon, 21 Oct 2013 20:13:22 GMT location: https://www.example.com content-encoding: gzip set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1]", 215},
		}},
	} {
		var got []hpack.HeaderField
		d := newFieldDecoder(c.table, func(f hpack.HeaderField) { got = append(got, f) })
		for i, s := range c.steps {
			got = got[:0]
			if _, err := d.Write(hex(s.block)); err != nil {
				t.Fatalf("%s step %d: %v", c.name, i+1, err)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("%s step %d: close: %v", c.name, i+1, err)
			}
			var fs []string
			for _, f := range got {
				fs = append(fs, f.Name+": "+f.Value)
			}
			if g := fmt.Sprint(fs); g != s.fields {
				t.Errorf("%s step %d: fields\n%s\nwant\n%s", c.name, i+1, g, s.fields)
			}
			if d.table.size != s.size {
				t.Errorf("%s step %d: table size %d, want %d", c.name, i+1, d.table.size, s.size)
			}
		}
	}
}

// TestFieldDecoderStaticTable: every index of the static table decodes to
// x/net's field for it.
func TestFieldDecoderStaticTable(t *testing.T) {
	if len(staticTable) != 61 {
		t.Fatalf("static table has %d entries, want 61", len(staticTable))
	}
	for i := range len(staticTable) {
		block := []byte{0x80 | byte(i+1)}
		ours, theirs := decodeBoth([][]byte{block}, func(int) []int { return nil }, 0)
		if !reflect.DeepEqual(ours, theirs) {
			t.Errorf("index %d: ours %v, x/net %v", i+1, ours, theirs)
		}
	}
}

// FuzzFieldDecoder feeds arbitrary blocks to both decoders: they must
// emit the same fields and fail on the same blocks.
func FuzzFieldDecoder(f *testing.F) {
	f.Add([]byte{0x82, 0x86, 0x84, 0x41, 0x0f, 'w', 'w', 'w', '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm'}, uint8(3))
	f.Add([]byte{0x3f, 0xe1, 0x1f, 0x82}, uint8(1))
	f.Add([]byte{0x40, 0x85, 0xf2, 0xb2, 0x4a, 0x87, 0xff, 0x81, 0x00}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		// two blocks, so that the first one's table entries are used
		cut := 0
		if len(data) > 0 {
			cut = int(split) % (len(data) + 1)
		}
		blocks := [][]byte{data[:cut], data[cut:]}
		frag := func(n int) []int {
			if n > 2 {
				return []int{n / 2}
			}
			return nil
		}
		ours, theirs := decodeBoth(blocks, frag, 64)
		if !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("ours\n%v\nx/net\n%v", ours, theirs)
		}
	})
}

// TestFieldDecoderInternBounded: the cache of decoded strings starts again
// when full, so a connection that sees ever new values holds a bounded
// amount.
func TestFieldDecoderInternBounded(t *testing.T) {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	d := newFieldDecoder(4096, func(hpack.HeaderField) {})
	for i := range 5000 {
		buf.Reset()
		enc.WriteField(hpack.HeaderField{Name: "x-id", Value: fmt.Sprintf("value-%d", i)})
		if _, err := d.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if n := len(d.intern.plain) + len(d.intern.huff); n > d.intern.limit()/internBytesPerEntry || d.intern.bytes > d.intern.limit() {
			t.Fatalf("after %d fields the cache holds %d strings, %d bytes", i+1, n, d.intern.bytes)
		}
	}
}
