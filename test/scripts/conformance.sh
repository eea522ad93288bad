#!/usr/bin/env bash
# conformance.sh: Kubernetes' conformance specs (test/conformance: the
# [Conformance] specs of [sig-node] and the node-side ones of [sig-storage])
# against a one-node cluster on this host: with minikubelet (bin/minikubelet)
# as its node, the node allowed to list and watch configMaps and secrets;
# with the kubelet of the same version. Then the side-by-side report in
# docs/conformance.
#
# A production node may not list configMaps and secrets, and minikubelet
# does (it watches them per namespace): in a production-configured cluster
# it starts no pod that mounts a service-account token, and every such spec
# fails only after the suite's 5-minute pod-start timeout, hours in all on
# 2 cores. The run "minikubelet" is that production run; it is left out
# unless CONFORMANCE_RUNS names it.
#
# Needs test/scripts/prepare.sh and prepare-cluster.sh (make conformance runs
# both). Environment: CONFORMANCE_PROCS e2e.test processes at a time (8:
# most of a failing spec's time is a wait), CONFORMANCE_OUT
# (bin/conformance-runs) for the runs' reports, outputs and logs,
# CONFORMANCE_RUNS ("minikubelet-node-lists kubelet"; "minikubelet" is the
# production run) to choose the runs (the report needs the kubelet's and
# one of minikubelet's).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${CONFORMANCE_OUT:-$REPO/bin/conformance-runs}
PROCS=${CONFORMANCE_PROCS:-8}
RUNS=${CONFORMANCE_RUNS:-minikubelet-node-lists kubelet}

"$GO" build -o bin/conformance ./test/conformance/cmd/conformance
[[ -x bin/minikubelet && -x bin/bedclean ]] || "$GO" build -o bin/ ./cmd/minikubelet ./test/ctrdtest/cmd/bedclean
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
