#!/usr/bin/env bash
# bench.sh: the bench report (text, bin/bench-report.json, bin/bench-plot.png):
# pod start latency of minikubelet against the raw CRI calls, on
# the bed's containerd 2.x. Prints figures; asserts nothing.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
"$GO" run ./test/bench -bed "$CACHE/bed.json" -bin "$REPO/bin/minikubelet" \
	-json "$REPO/bin/bench-report.json" -plot "$REPO/bin/bench-plot.png" "$@"
# The streaming figures (issue 18.8: exec round trip through the agent and
# straight to the runtime, port-forward throughput, memory per open exec
# session) are Go benchmarks of test/e2e against the same bed's containerd
# 2.x, with the same binary.
MINIKUBELET_BED="$CACHE/bed.json" MINIKUBELET_BIN="$REPO/bin/minikubelet" \
	"$GO" test -run '^$' -bench '^BenchmarkStream' -benchtime 100x -count 1 -timeout 30m ./test/e2e/
