// Package spdy is a small client of SPDY/3.1 as the container runtime's
// streaming server speaks it (moby/spdystream, under k8s.io/streaming),
// for the sessions the agent itself runs against the runtime: an exec or
// attach whose client spoke a protocol the runtime does not
// (agent/server's v5 WebSocket translation). The byte proxies that carry
// a client's own SPDY to the runtime do not use it.
//
// It exists for memory. spdystream's framer compresses header blocks with
// a zlib writer at BestCompression, whose first use allocates about
// 700 KiB kept for the connection's life, and its connection runs a dozen
// goroutines; a session of this package keeps a few KiB and one
// goroutine:
//   - Header blocks this side sends are zlib with stored (uncompressed)
//     deflate blocks, which any inflater takes: no compressor.
//   - Header blocks the server sends are inflated by an inflater from a
//     pool shared by every connection, primed with the connection's
//     window (the dictionary and the blocks so far), which is all the
//     state an inflater has between two sync-flushed blocks.
//   - One read loop per connection hands each stream its data through a
//     buffer from a pool, taken when data arrives and given back once it
//     is read, at most streamBuffer bytes: when a stream's reader lags,
//     the read loop waits, and TCP holds the server back.
//   - Streams implement io.WriterTo and io.ReaderFrom, so that the
//     io.Copy calls of client-go's remotecommand copy without 32 KiB
//     buffers of their own.
//   - Pings are timers, not goroutines.
//
// Data enters through NewConn (a connection the server has switched to
// SPDY) or RoundTripper (which dials and upgrades with a DialFunc) and
// leaves through the httpstream.Connection and httpstream.Stream
// interfaces client-go's remotecommand takes.
//
// Limits: client side only (a stream the server opens is refused); no
// flow control (spdystream has none: SETTINGS and WINDOW_UPDATE are read
// and ignored); no stream priorities; the server's header blocks are
// taken up to 256 KiB; a stream's reader that stops reading stops every
// stream of its connection once its buffer is full, as with spdystream.
package spdy
