// Package cli is minikubelet's local command line: `minikubelet pods` and
// `minikubelet logs`, which talk to a running agent (/pods and
// /containerLogs, by default through its root-only Unix socket) and print what
// kubectl prints for the same pods. It keeps no state; cmd/minikubelet
// only dispatches to it.
package cli
