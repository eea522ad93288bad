#!/usr/bin/env bash
# faults.sh: the fault suite (test/e2e/faults_*_test.go, every TestFault*) in
# its full form (MINIKUBELET_FAULTS=full): the agent SIGKILLed 20 times during
# pod churn, containerd restarted under it, 1,000 manifest writes, renames
# and deletes in 60s, a full disk under the root dir, the manifest URL
# flapping; against containerd 1.6 and 2.x, with the race-detector build of
# the agent. `go test` runs the same tests in a short form. Prints each
# test's result, duration and key figures. Whatever a crashed test leaves
# behind is torn down on exit. Extra arguments go to go test (e.g.
# -run 'TestFaultFullDisk').
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}

export MINIKUBELET_BED="$CACHE/bed.json"
"$GO" build -race -tags "${GOTAGS:-grpcnotrace}" -o "$REPO/bin/minikubelet-race" ./cmd/minikubelet
export MINIKUBELET_BIN="$REPO/bin/minikubelet-race"
export MINIKUBELET_E2E=required
export MINIKUBELET_FAULTS=${MINIKUBELET_FAULTS:-full}
MINIKUBELET_BED_BASE=$(mktemp -d /tmp/minikubelet-faults.XXXXXX)
export MINIKUBELET_BED_BASE

cleanup() {
	"$REPO/bin/bedclean" "$MINIKUBELET_BED_BASE" || echo "faults.sh: cleanup of $MINIKUBELET_BED_BASE failed" >&2
	rm -rf "$MINIKUBELET_BED_BASE"
}
trap cleanup EXIT

"$GO" build -o "$REPO/bin/testsum" ./test/testsum
# The lines each test logs about what it did and how long it took.
notes='faults_[a-z]+_test\.go:[0-9]+: .*((short|full) form|kills in|operations in|final set|converged|invariant checker|clean in|containerd keeps|restart [0-9]+:|reported after|answers served|disk full|waiting\(ContainerCreating)'
set -o pipefail
"$GO" test -json -race -count=1 -timeout 60m -run 'TestFault' "$@" ./test/e2e/ 2>&1 |
	"$REPO/bin/testsum" -report -notes "$notes"
