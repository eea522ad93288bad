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
