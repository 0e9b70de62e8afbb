package observe

import "github.com/pollproxy/pollproxy/proxy/stream"

// GRPCCodes are gRPC's status codes by number, as gRPC spells them: the
// values of the metrics' grpc_code label.
var GRPCCodes = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
	"NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
	"FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
	"Internal", "Unavailable", "DataLoss", "Unauthenticated",
}

// grpcUnknown is the code a grpc-status outside GRPCCodes counts as, so
// the label stays bounded whatever an origin sends.
const grpcUnknown = 2

// NoteGRPC records the grpc-status among fs (a response's trailers, or
// the head of a trailers-only response), if there is one: GRPC is set
// and GRPCStatus holds its code, a value that is not one of gRPC's codes
// counting as Unknown.
func (r *RequestLog) NoteGRPC(fs []stream.Field) {
	for _, f := range fs {
		if f.Name != "grpc-status" {
			continue
		}
		code, ok := 0, len(f.Value) > 0 && len(f.Value) <= 2
		for i := 0; ok && i < len(f.Value); i++ {
			c := f.Value[i]
			ok = c >= '0' && c <= '9'
			code = code*10 + int(c-'0')
		}
		if !ok || code >= len(GRPCCodes) {
			code = grpcUnknown
		}
		r.GRPC, r.GRPCStatus = true, uint8(code)
		return
	}
}
