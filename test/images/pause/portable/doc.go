// Command portable is the test bed's pause process where
// test/images/pause has no machine code for the architecture: the same
// behaviour (reap every child re-parented to it, exit 0 on SIGTERM or
// SIGINT) in Go, so with the Go runtime's threads (7 here, where the real
// pause has one). Built static (CGO_ENABLED=0) by the generator
// test/images/pause, which the scripts run on every architecture.
package main
