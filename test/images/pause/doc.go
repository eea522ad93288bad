// Command pause is the sandbox ("pause") process of the test bed's local
// pause image, localhost/minikubelet/pause:3.10.
//
// It owns nothing but its own process: run as PID 1 of a pod's PID
// namespace, it reaps every child that is re-parented to it (wait4(-1) on
// SIGCHLD, so no zombie outlives its container) and exits 0 on SIGTERM or
// SIGINT. It is built static (CGO_ENABLED=0) by test/scripts/prepare.sh and
// packed into an OCI image by test/images/mkimage.
package main
