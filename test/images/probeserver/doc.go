// Command probeserver is the test image the probe tests run: one static
// binary that answers HTTP, TCP and gRPC health checks and an exec check,
// with answers a test flips at runtime, so that no image from outside the
// machine is needed.
//
//	probeserver serve [-http :8080] [-tcp :8081] [-grpc :8082] [-state DIR] [KEY=VALUE ...]
//	probeserver check [-state DIR]
//
// serve answers:
//   - HTTP GET /healthz with the status in state "http" (default 200), and
//     GET /startup with the status in state "startup" (default 200); when
//     state "header" is NAME:VALUE, /healthz answers 403 to a request
//     without that header; GET /redirect?to=URL answers 302 to URL.
//   - TCP connections on the tcp port while state "tcp" is "on" (default).
//   - the standard gRPC health service: "" and "probe" are SERVING unless
//     state "grpc" says NOT_SERVING.
//   - GET /set?KEY=VALUE&... changes state; GET /state prints it.
//
// State "delay" (a Go duration) delays every answer, the exec check
// included, to test timeouts. check exits with state "exec" (default 0).
// KEY=VALUE arguments of serve set the initial state. The state lives in
// files under DIR (default /tmp/probeserver) so that check, a separate
// process started by the runtime, reads what serve was told.
package main
