#!/usr/bin/env bash
# conformance.sh: Kubernetes' conformance specs (test/conformance: the
# [Conformance] specs of [sig-node] and the node-side ones of [sig-storage])
# against a one-node cluster on this host: with minikubelet (bin/minikubelet)
# as its node, on a production node's credentials (system:node:<name> under
# the Node authorizer and NodeRestriction); with the kubelet of the same
# version. Then the side-by-side report in docs/conformance.
#
# The run "minikubelet-node-lists" also lets the node list and watch every
# configMap and secret, beyond a production node's rights. minikubelet no
# longer needs that (it fetches and watches each object its pods refer to
# on its own, as the kubelet does); the run stays for comparing the two and
# is left out unless CONFORMANCE_RUNS names it.
#
# Needs test/scripts/prepare.sh and prepare-cluster.sh (make conformance runs
# both). Environment: CONFORMANCE_PROCS e2e.test processes at a time (8:
# most of a failing spec's time is a wait), CONFORMANCE_OUT
# (bin/conformance-runs) for the runs' reports, outputs and logs,
# CONFORMANCE_RUNS ("minikubelet kubelet"; "minikubelet-node-lists" adds the
# run whose node may list) to choose the runs (the report needs the
# kubelet's and one of minikubelet's).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${CONFORMANCE_OUT:-$REPO/bin/conformance-runs}
PROCS=${CONFORMANCE_PROCS:-8}
RUNS=${CONFORMANCE_RUNS:-minikubelet kubelet}

"$GO" build -o bin/conformance ./test/conformance/cmd/conformance
[[ -x bin/minikubelet && -x bin/bedclean ]] || "$GO" build -tags "${GOTAGS:-grpcnotrace}" -o bin/ ./cmd/minikubelet ./test/ctrdtest/cmd/bedclean
BASE=$(mktemp -d /tmp/mkc.XXXXXX)
cleanup() {
	bin/bedclean "$BASE" || echo "conformance.sh: cleanup of $BASE failed" >&2
	rm -rf "$BASE"
}
trap cleanup EXIT

declare -A took
for run in $RUNS; do
	case $run in
	minikubelet | kubelet) args=(-agent "$run") ;;
	minikubelet-node-lists) args=(-agent minikubelet -node-lists-objects) ;;
	*) echo "conformance.sh: unknown run $run" >&2; exit 2 ;;
	esac
	rm -rf "${OUT:?}/$run"
	t0=$SECONDS
	bin/conformance run "${args[@]}" -minikubelet bin/minikubelet -procs "$PROCS" -base "$BASE" -out "$OUT/$run"
	took[$run]=$((SECONDS - t0))
done
# The report compares the kubelet's run with minikubelet's production run
# if this invocation made one, else with the run whose node may list.
ran() { [[ " $RUNS " == *" $1 "* && -f "$OUT/$1/meta.json" ]]; }
report=(bin/conformance report -kubelet "$OUT/kubelet" -out docs/conformance)
if ! ran kubelet; then
	echo "conformance.sh: no kubelet run: no report" >&2
elif ran minikubelet; then
	ran minikubelet-node-lists && report+=(-node-lists "$OUT/minikubelet-node-lists")
	"${report[@]}" -minikubelet "$OUT/minikubelet"
elif ran minikubelet-node-lists; then
	"${report[@]}" -minikubelet "$OUT/minikubelet-node-lists"
else
	echo "conformance.sh: no minikubelet run: no report" >&2
fi
for run in $RUNS; do
	echo "conformance: the $run run took ${took[$run]} s (cluster start, suite, teardown)"
done
