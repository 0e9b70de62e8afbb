// Package offload runs the work a loop must not wait for — a TLS
// handshake, a bcrypt comparison, an open, stat or read of a file — on a
// fixed set of goroutines behind a bounded queue, and hands each answer
// back to the loop that asked through its task queue (netpoll.Loop's
// Post), so that only the loop ever touches the loop's state.
//
// A loop never waits for room: when every worker is busy and the queue is
// full, Submit refuses at once with ErrFull, and the loop answers its
// client instead (a closed connection, a 503), so a flood costs the
// clients that send it a refusal and the loops nothing but that answer.
// Work that continues something already started (the next read of a
// response under way) is never refused and runs before new work, so what
// was started finishes.
//
// tls runs its handshakes on a Pool, proxy/auth its password comparisons
// and proxy/fileserver its disk work; each sizes its own.
//
// One job per file: pool.go (the Pool, its two queues and Do, which posts
// a job's answer back to the loop).
package offload
