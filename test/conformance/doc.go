// Package conformance runs Kubernetes' own end-to-end conformance specs
// (e2e.test, built by test/scripts/prepare-cluster.sh) against a one-node
// cluster of test/cluster, and compares minikubelet with the kubelet.
//
// Scope: Focus selects the [Conformance] specs of [sig-node] and those of
// [sig-storage] for the node's own volume types; Skips lists the few the
// harness cannot host, each with its reason. Suite.Run starts a cluster
// with one node agent, runs the specs with the ginkgo CLI (E2E.Run: several
// e2e.test processes side by side, [Serial] specs alone at the end) and
// leaves in its output dir the JUnit report, the suite's output, meta.json
// (versions, node info, timings) and every component's log. ReadRun reads
// such a dir back; NewReport joins a minikubelet run, optionally a
// minikubelet run whose node may list configMaps and secrets, and a kubelet
// run by spec name, and groups minikubelet's failures by cause: the first
// line of causes.txt ("GROUP | REGEXP" on the spec's name and failure
// message) that matches. WriteMarkdown and WriteJSON render it
// (docs/conformance, by cmd/conformance and test/scripts/conformance.sh).
//
// TestConformanceSlice runs the specs of slice.txt against minikubelet as
// part of test/scripts/test.sh, one Go subtest per spec.
package conformance
