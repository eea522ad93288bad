// Package e2e is minikubelet's integration suite: it runs the real
// bin/minikubelet against real containerd daemons (Debian's 1.6 and the 2.x
// build of the test bed, see test/ctrdtest) and checks what the agent
// reports on its endpoints against what the runtime itself holds.
//
// The suite runs when MINIKUBELET_BED names the bed.json that
// test/scripts/prepare.sh writes; without it every test is skipped, unless
// MINIKUBELET_E2E=required, when the suite fails instead. `make test` sets
// both. Every test cleans up the sandboxes, containers, files and processes
// it made, also when it fails.
//
// The fault suite (faults_*_test.go, TestFault*) runs in a short form
// unless MINIKUBELET_FAULTS=full (`make faults`). MINIKUBELET_E2E_LOGS=DIR
// keeps the whole agent log of every failed test in DIR.
package e2e
