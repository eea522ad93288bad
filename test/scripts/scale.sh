#!/usr/bin/env bash
# scale.sh: make scale (issue 21 item 6), not part of make test. One control
# plane of test/cluster (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) on this host, then, one after the other, hollow
# minikubelet nodes (bin/minikubelet against bin/fakecri) and kubemark's
# hollow kubelets (built by prepare-cluster.sh scale), 100 of each by
# default, 1,000 pods scheduled across each set: agent memory per node (and
# fakecri's apart), the nodes' apiserver requests per node and minute and
# per pod, the apiserver's CPU, pod create-to-Running latency. Writes
# bin/scale-report.json and bin/scale-report.txt and prints the text.
# Arguments go to test/scale/cmd/scale (-nodes, -pods, -agents, -window,
# ...; go run ./test/scale/cmd/scale -h lists them). It holds the host's
# cluster lock for its whole length (about 25 minutes at the default size);
# whatever a killed run leaves behind is torn down on exit.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
BASE=$(mktemp -d /tmp/mk-scale.XXXXXX)
cleanup() {
	"$REPO/bin/bedclean" "$BASE" || echo "scale.sh: cleanup of $BASE failed" >&2
	rm -rf "$BASE"
}
trap cleanup EXIT
"$GO" build -o "$REPO/bin/scale" ./test/scale/cmd/scale
"$REPO/bin/scale" -bed "$CACHE/bed.json" -cluster-json "${MINIKUBELET_CLUSTER:-$CACHE/cluster.json}" -dir "$BASE" \
	-bin "$REPO/bin/minikubelet" -fakecri "$REPO/bin/fakecri" \
	-json "$REPO/bin/scale-report.json" -text "$REPO/bin/scale-report.txt" "$@"
