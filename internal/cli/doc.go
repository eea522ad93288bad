// Package cli is minikubelet's local command line: `minikubelet pods` and
// `minikubelet logs`, which talk to a running agent's read-only endpoints
// (/pods and /containerLogs, by default on 127.0.0.1:10255) and print what
// kubectl prints for the same pods. It keeps no state; cmd/minikubelet
// only dispatches to it.
package cli
