#!/usr/bin/env bash
# test.sh: every test. go vet, then unit tests and the integration suite
# (test/e2e, test/ctrdtest), which start private containerd daemons (1.6 from
# Debian and the cached 2.x build) under a temp dir and run bin/minikubelet
# against them. Whatever a crashed test leaves behind is torn down on exit.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}

export MINIKUBELET_BED="$CACHE/bed.json"
# The integration suite runs a race-detector build of the agent; a race it
# reports fails the test that saw it.
"$GO" build -race -tags "${GOTAGS:-grpcnotrace}" -o "$REPO/bin/minikubelet-race" ./cmd/minikubelet
export MINIKUBELET_BIN="$REPO/bin/minikubelet-race"
# The hollow nodes' in-memory runtime (TestClusterHollowNodes).
"$GO" build -o "$REPO/bin/fakecri" ./test/scale/cmd/fakecri
export MINIKUBELET_FAKECRI="$REPO/bin/fakecri"
export MINIKUBELET_E2E=required
MINIKUBELET_BED_BASE=$(mktemp -d /tmp/minikubelet-test.XXXXXX)
export MINIKUBELET_BED_BASE

cleanup() {
	"$REPO/bin/bedclean" "$MINIKUBELET_BED_BASE" || echo "test.sh: cleanup of $MINIKUBELET_BED_BASE failed" >&2
	rm -rf "$MINIKUBELET_BED_BASE"
}
trap cleanup EXIT

"$GO" vet ./...
"$GO" build -o "$REPO/bin/testsum" ./test/testsum
# go test's per-package lines with running counts, a line per top-level
# test that took a second or more, a line naming the running tests after 30s
# of silence, failed tests' output, the skips grouped by reason, and a
# closing line saying what ran: "N passed, N failed, N skipped".
# The hostile-input tests that feed the manifest decoder tens of MiB skip
# themselves under the race detector (too slow there): they run again
# without it, so that CI proves the caps hold in time and memory.
set -o pipefail
{
	rc=0
	"$GO" test -json -race -count=1 -timeout 25m ./... "$@" 2>&1 || rc=$?
	[ $# -gt 0 ] || "$GO" test -json -count=1 -timeout 5m -run '^(TestHostileInput|TestManyContainersLinear)$' ./agent/manifest/ 2>&1 || rc=$?
	# The whole-cluster tests (test/cluster's own, and the conformance
	# slice of test/conformance/slice.txt against minikubelet) skip
	# themselves above: they own the host's iptables and run here, one
	# after the other, on their own.
	[ $# -gt 0 ] || MINIKUBELET_CLUSTER_TESTS=on "$GO" test -json -race -p 1 -count=1 -timeout 25m \
		-run '^(TestClusterServicesAndDNS|TestKubectlThroughKubeletPort|TestClusterBootstrapAndRotation|TestClusterHollowNodes|TestConformanceSlice)$' ./test/cluster/ ./test/conformance/ 2>&1 || rc=$?
	exit "$rc"
} | "$REPO/bin/testsum"
