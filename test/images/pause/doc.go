// Command pause writes the test bed's pause binary, the sandbox process of
// the local image localhost/minikubelet/pause:3.10: pause -o FILE.
//
// The binary does what the real pause image's does, in one thread: run as
// PID 1 of a pod's PID namespace, it reaps every child re-parented to it
// (wait4(-1, WNOHANG) on SIGCHLD until none is left, so no zombie outlives
// its container), exits 0 on SIGTERM or SIGINT, and otherwise sleeps in
// pause(2). A stand-in written in Go had the Go runtime's 7 threads, so
// every pod of the bed had 7 tasks in its sandbox cgroup where a real one
// has 1, and whatever counts or walks a pod's tasks (the stats, the
// runtime) did more work than on a real node.
//
// On amd64 the binary is a static ELF of 362 bytes made here: an ELF
// header, a read-and-execute segment and a non-executable stack, and the
// machine code in amd64.go (its assembly beside it). On other
// architectures pause builds test/images/pause/portable to FILE instead,
// the same process in Go, so that the scripts (prepare.sh for the bed,
// prepare-cluster.sh for the e2e images) make their pause one way.
package main
