#!/usr/bin/env bash
# run.sh: run minikubelet on examples/manifests against a private containerd
# 2.x that lives only as long as this command. Ctrl-C stops both and removes
# every pod, mount and file they made.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
RUNTIME=${MINIKUBELET_RUNTIME:-containerd-2.1}
DIR=$(mktemp -d /tmp/minikubelet-run.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

cat >&2 <<MSG
minikubelet is starting on $REPO/examples/manifests (runtime: $RUNTIME, files under $DIR).
  See the pods:      curl -s http://127.0.0.1:10255/pods | python3 -m json.tool
  Health:            curl -s http://127.0.0.1:10248/healthz
  Container logs:    $DIR/logs/<namespace>_<pod>_<uid>/<container>/0.log
  Add or edit pods:  change the files in $REPO/examples/manifests
  Stop:              Ctrl-C (pods and the private containerd are removed)
MSG

"$REPO/bin/withcontainerd" -bed "$CACHE/bed.json" -runtime "$RUNTIME" -dir "$DIR/bed" -- \
	"$REPO/bin/minikubelet" \
	--pod-manifest-path "$REPO/examples/manifests" \
	--container-runtime-endpoint @ENDPOINT@ \
	--root-dir "$DIR/root" \
	--pod-logs-dir "$DIR/logs" \
	--cgroup-root @CGROUP@ \
	-v=1 "$@"
