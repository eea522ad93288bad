#!/usr/bin/env bash
# run.sh: run minikubelet on examples/manifests against a private containerd
# 2.x that lives only as long as this command. On Ctrl-C minikubelet stops
# and, as a kubelet does, leaves its pods running; withcontainerd then
# removes them with the private containerd, and this script removes the
# run's directory: nothing of the run is left.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
RUNTIME=${MINIKUBELET_RUNTIME:-containerd-2.1}
DIR=$(mktemp -d /tmp/minikubelet-run.XXXXXX)
finish() {
	rm -rf "$DIR"
	echo "run.sh: removed $DIR (the agent's root dir and the pod logs); nothing of this run is left" >&2
}
trap finish EXIT

cat >&2 <<MSG
minikubelet is starting on $REPO/examples/manifests (runtime: $RUNTIME, files under $DIR).
  The CLI:           $REPO/bin/minikubelet pods        (or: export PATH=$REPO/bin:\$PATH; minikubelet pods)
                     $REPO/bin/minikubelet logs web    (a pod's logs; -c CONTAINER, -f to follow)
  See the pods:      curl -s http://127.0.0.1:10255/pods | python3 -m json.tool
  Health:            curl -s http://127.0.0.1:10248/healthz
  Container logs:    $DIR/logs/<namespace>_<pod>_<uid>/<container>/0.log
  Add or edit pods:  change the files in $REPO/examples/manifests
  Stop:              Ctrl-C. minikubelet stops and leaves its pods running, as a kubelet
                     does ("pods keep running"); this script then removes them, the private
                     containerd and $DIR.
MSG

"$REPO/bin/withcontainerd" -bed "$CACHE/bed.json" -runtime "$RUNTIME" -dir "$DIR/bed" -- \
	"$REPO/bin/minikubelet" \
	--pod-manifest-path "$REPO/examples/manifests" \
	--container-runtime-endpoint @ENDPOINT@ \
	--root-dir "$DIR/root" \
	--pod-logs-dir "$DIR/logs" \
	--cgroup-root @CGROUP@ \
	-v=1 "$@"
