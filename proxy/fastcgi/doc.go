// Package fastcgi is the FastCGI wire format as pollproxy speaks it to an
// application server (php-fpm): records written into a request's output
// buffer and cut apart in the buffer they were read into, with no
// goroutine and no allocation per record. The connection that carries
// them, its pool and its exchange are the proxy's (proxy/fcgiconn.go);
// the CGI environment is built there too, from the route's view of the
// request.
//
//   - record.go: record types and statuses, the header, FCGI_BEGIN_REQUEST,
//     a stream's records and its empty end record, a name-value pair.
//   - params.go: the FCGI_PARAMS stream, written pair by pair so that no
//     pair spans two records.
//   - decode.go: the Decoder, which moves FCGI_STDOUT content to the
//     front of the read buffer, keeps FCGI_STDERR up to a bound and
//     notes FCGI_END_REQUEST.
//   - head.go: the CGI response head: where it ends, and the status its
//     Status or Location field gives.
//   - split.go: the split of a request path into script and PATH_INFO,
//     by ASCII bytes only, for the transport and for the file matcher's
//     split_path.
package fastcgi
