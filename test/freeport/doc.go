// Package freeport picks TCP ports on 127.0.0.1 for the servers the tests
// start (etcd, kube-apiserver, the agent, a registry).
//
// The usual trick, listening on port 0 and closing, returns a port from the
// kernel's ephemeral range: the range every outgoing connection takes its
// local port from. A test that stops a server and starts it again on the
// same port (an apiserver outage, an agent restart) can then find the port
// taken in between by a client socket or by another test's port 0, and the
// restart fails with EADDRINUSE. Ports picked here lie below the ephemeral
// range (and above the well-known ports of Kubernetes and etcd), so no
// connection and no port-0 listener ever takes them.
package freeport
