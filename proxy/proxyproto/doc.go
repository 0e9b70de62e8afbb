// Package proxyproto reads the PROXY protocol header (versions 1 and 2,
// haproxy.org/download/2.9/doc/proxy-protocol.txt) a TCP load balancer
// puts in front of a connection to tell the server who the client is.
//
// Parse works on the bytes read so far and never waits: a loop calls it
// again with more bytes while it says ErrIncomplete. It allocates
// nothing; the policy — which sources may send a header, and whether one
// is required — is the caller's.
//
// proxyproto.go holds it all: Header, Parse, Append and MaxHeader.
package proxyproto
