// Command sinkorigin is an HTTP/1.1 origin on loopback that reads and
// discards every request body and answers with the number of bytes it
// read: the far end of an upload measurement (scripts/upload). It prints
// its address and runs until interrupted, or for -for when that is set.
//
// main.go holds all of it.
package main
