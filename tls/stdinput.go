package tls

import (
	"bytes"
	stdtls "crypto/tls"
	"reflect"
	"unsafe"
)

// crypto/tls keeps its input in three buffers of its Conn that it never
// shrinks: rawInput (ciphertext of the record being read, grown to the
// largest record plus 512 bytes), input (that record's plaintext, a
// bytes.Reader over rawInput's memory) and hand (handshake messages, grown
// to the largest one). After a handshake both hold at least the
// ClientHello, about 1.7 KiB each from a client that offers
// X25519MLKEM768: 3.5 KiB, the largest part of what an idle connection
// costs (docs/performance.md, "Idle connections"). crypto/tls has no API
// to let go of them, so releaseInput reaches them through the offsets
// reflect reports for the unexported fields, checked once here by name
// and type. A Go release that renames or retypes one of them turns the
// release off (TestStdInputLayout fails, so the upgrade notices) rather
// than writing where it should not.
var stdInput = findStdInput()

// stdInputLayout is where crypto/tls.Conn keeps its input buffers.
type stdInputLayout struct {
	rawInput, input, hand uintptr // field offsets in crypto/tls.Conn
	ok                    bool    // all three found with the expected types
}

func findStdInput() stdInputLayout {
	conn := reflect.TypeFor[stdtls.Conn]()
	field := func(name string, want reflect.Type) (uintptr, bool) {
		f, ok := conn.FieldByName(name)
		return f.Offset, ok && len(f.Index) == 1 && f.Type == want
	}
	buf, reader := reflect.TypeFor[bytes.Buffer](), reflect.TypeFor[bytes.Reader]()
	var l stdInputLayout
	var okRaw, okIn, okHand bool
	l.rawInput, okRaw = field("rawInput", buf)
	l.input, okIn = field("input", reader)
	l.hand, okHand = field("hand", buf)
	l.ok = okRaw && okIn && okHand
	return l
}

// stdInputBuffers returns c's input buffers, or nils when the layout was
// not recognised.
func stdInputBuffers(c *stdtls.Conn) (rawInput *bytes.Buffer, input *bytes.Reader, hand *bytes.Buffer) {
	if !stdInput.ok {
		return nil, nil, nil
	}
	p := unsafe.Pointer(c)
	return (*bytes.Buffer)(unsafe.Add(p, stdInput.rawInput)),
		(*bytes.Reader)(unsafe.Add(p, stdInput.input)),
		(*bytes.Buffer)(unsafe.Add(p, stdInput.hand))
}

// releaseInput lets go of crypto/tls's input buffers of c when all three
// are empty, as a zero bytes.Buffer and bytes.Reader, which crypto/tls
// grows again at its next record; it returns the capacity let go of. With
// a partial record, an undelivered plaintext or a handshake message
// pending it does nothing. The caller must own c: no crypto/tls call on it
// may be running (the handshake worker once the handshake returned, the
// loop in the loop phase).
func releaseInput(c *stdtls.Conn) int {
	raw, in, hand := stdInputBuffers(c)
	if raw == nil || raw.Len() > 0 || in.Len() > 0 || hand.Len() > 0 {
		return 0
	}
	n := raw.Cap() + hand.Cap()
	// input reads from rawInput's memory: it must let go too, or it
	// keeps the array alive.
	*raw, *hand = bytes.Buffer{}, bytes.Buffer{}
	in.Reset(nil)
	return n
}
