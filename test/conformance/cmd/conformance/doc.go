// Command conformance runs Kubernetes' conformance specs against a
// one-node cluster (test/cluster) and reports how minikubelet and the
// kubelet compare:
//
//	conformance run -agent minikubelet|kubelet -out DIR [-minikubelet BIN] [-procs N] [-focus RE]
//	conformance report -minikubelet DIR [-node-lists DIR] -kubelet DIR -causes FILE -out DOCDIR
//	conformance slice -run DIR [-max-seconds S] [-out FILE]
//
// run starts the cluster with the agent, runs the specs in scope
// (conformance.Focus, minus conformance.Skips) with the ginkgo CLI, and
// writes DIR/junit.xml, DIR/e2e.log, DIR/meta.json and the components'
// logs in DIR/logs. report reads two such dirs and writes DOCDIR/README.md
// (a table per spec, totals, failures grouped by cause), results.json
// and both JUnit reports. slice writes the CI slice (slice.txt) chosen
// from a minikubelet run. The binaries come from $MINIKUBELET_BED and
// $MINIKUBELET_CLUSTER (default: bed.json and cluster.json in
// $MINIKUBELET_CACHE, default /var/cache/minikubelet).
package main
