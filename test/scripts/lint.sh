#!/usr/bin/env bash
# lint.sh VERSION: golangci-lint at VERSION (built from the Go module proxy
# into the cache on first use) over the whole module.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
VERSION=${1:?usage: lint.sh VERSION}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
BIN="$CACHE/golangci-lint-$VERSION/golangci-lint"
if [[ ! -x "$BIN" ]]; then
	echo "lint: building golangci-lint $VERSION (once)" >&2
	GOBIN="$(dirname "$BIN")" "$GO" install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
fi
"$BIN" run ./...
