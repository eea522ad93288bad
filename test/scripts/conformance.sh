#!/usr/bin/env bash
# conformance.sh: Kubernetes' conformance specs (test/conformance: the
# [Conformance] specs of [sig-node] and the node-side ones of [sig-storage])
# against a one-node cluster on this host, three times: with minikubelet
# (bin/minikubelet) as its node; again with minikubelet, the node allowed
# to list and watch configMaps and secrets (beyond a production node's
# rights: it shows what fails behind that); with the kubelet of the same
# version. Then the side-by-side report in docs/conformance.
#
# Needs test/scripts/prepare.sh and prepare-cluster.sh (make conformance runs
# both). Environment: CONFORMANCE_PROCS e2e.test processes at a time (8:
# most of a failing spec's time is a wait), CONFORMANCE_OUT (bin/conformance)
# for the runs' reports, outputs and logs, CONFORMANCE_RUNS ("minikubelet
# minikubelet-node-lists kubelet") to run some of them only (the report
# needs minikubelet and kubelet).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${CONFORMANCE_OUT:-$REPO/bin/conformance}
PROCS=${CONFORMANCE_PROCS:-8}
RUNS=${CONFORMANCE_RUNS:-minikubelet minikubelet-node-lists kubelet}

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
if [[ -f "$OUT/minikubelet/meta.json" && -f "$OUT/kubelet/meta.json" ]]; then
	lists=()
	[[ -f "$OUT/minikubelet-node-lists/meta.json" ]] && lists=(-node-lists "$OUT/minikubelet-node-lists")
	bin/conformance report -minikubelet "$OUT/minikubelet" "${lists[@]}" -kubelet "$OUT/kubelet" -out docs/conformance
fi
for run in $RUNS; do
	echo "conformance: the $run run took ${took[$run]} s (cluster start, suite, teardown)"
done
