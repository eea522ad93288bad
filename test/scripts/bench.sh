#!/usr/bin/env bash
# bench.sh: the bench report (text, bin/bench-report.json, bin/bench-plot.png):
# pod start latency of minikubelet against the raw CRI calls, on
# the bed's containerd 2.x, then the cluster part (test/bench/cluster.go):
# kubectl exec round trips, port-forward throughput and agent memory per
# open exec stream through the apiserver, minikubelet and the kubelet side
# by side in the one-node cluster of test/cluster. Prints figures; asserts
# nothing. Arguments go to test/bench (go run ./test/bench -h lists them).
# MINIKUBELET_BENCH_CLUSTER=off skips the cluster part; so does a missing
# cluster cache ($MINIKUBELET_CLUSTER, made by make prepare-cluster), with a
# message saying so.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
CLUSTER_JSON=${MINIKUBELET_CLUSTER:-$CACHE/cluster.json}
cluster_args=(-cluster-json "$CLUSTER_JSON")
if [[ ${MINIKUBELET_BENCH_CLUSTER:-on} == off ]]; then
	echo "bench.sh: MINIKUBELET_BENCH_CLUSTER=off: skipping the cluster part (streaming through the apiserver, minikubelet and the kubelet side by side)" >&2
	cluster_args=(-cluster=false)
elif [[ ! -f $CLUSTER_JSON ]]; then
	echo "bench.sh: no cluster cache at $CLUSTER_JSON: skipping the cluster part (streaming through the apiserver, minikubelet and the kubelet side by side); make prepare-cluster builds the cache" >&2
	cluster_args=(-cluster=false)
fi
"$GO" run ./test/bench -bed "$CACHE/bed.json" -bin "$REPO/bin/minikubelet" \
	-json "$REPO/bin/bench-report.json" -plot "$REPO/bin/bench-plot.png" "${cluster_args[@]}" "$@"
# The standalone streaming figures (issue 18.8: exec round trip through the
# agent and straight to the runtime, port-forward throughput, memory per
# open exec session) are Go benchmarks of test/e2e against the same bed's
# containerd 2.x, with the same binary.
MINIKUBELET_BED="$CACHE/bed.json" MINIKUBELET_BIN="$REPO/bin/minikubelet" \
	"$GO" test -run '^$' -bench '^BenchmarkStream' -benchtime 100x -count 1 -timeout 30m ./test/e2e/
