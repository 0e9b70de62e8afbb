package observe

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

func TestNoteGRPC(t *testing.T) {
	for _, c := range []struct {
		fields []stream.Field
		grpc   bool
		code   uint8
	}{
		{nil, false, 0},
		{[]stream.Field{{Name: "content-type", Value: "application/grpc"}}, false, 0},
		{[]stream.Field{{Name: "grpc-status", Value: "0"}}, true, 0},
		{[]stream.Field{{Name: "grpc-message", Value: "x"}, {Name: "grpc-status", Value: "16"}}, true, 16},
		{[]stream.Field{{Name: "grpc-status", Value: "17"}}, true, grpcUnknown},
		{[]stream.Field{{Name: "grpc-status", Value: "-1"}}, true, grpcUnknown},
		{[]stream.Field{{Name: "grpc-status", Value: ""}}, true, grpcUnknown},
		{[]stream.Field{{Name: "grpc-status", Value: "123"}}, true, grpcUnknown},
	} {
		var r RequestLog
		r.NoteGRPC(c.fields)
		if r.GRPC != c.grpc || r.GRPCStatus != c.code {
			t.Errorf("%v: noted %v %d, want %v %d", c.fields, r.GRPC, r.GRPCStatus, c.grpc, c.code)
		}
	}
	if GRPCCodes[12] != "Unimplemented" || len(GRPCCodes) != 17 {
		t.Error("GRPCCodes are not gRPC's")
	}
}
