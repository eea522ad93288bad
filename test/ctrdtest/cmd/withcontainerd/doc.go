// Command withcontainerd runs a command against a private containerd from
// the test bed and tears the containerd down when the command ends.
//
//	withcontainerd -bed $MINIKUBELET_CACHE/bed.json -runtime containerd-2.1 [-dir BASE] -- CMD ARGS...
//
// In CMD's arguments, @ENDPOINT@ becomes the CRI endpoint
// (unix:///.../containerd.sock), @DIR@ the instance directory and @CGROUP@
// its cgroup parent (removed with the instance: an agent's --cgroup-root
// belongs there). CMD's
// environment gains CONTAINER_RUNTIME_ENDPOINT (the endpoint) and
// CONTAINERD_ADDRESS (the socket, so a plain "ctr -n k8s.io ..." talks to
// the private daemon).
//
// CMD runs in its own process group: a SIGINT, SIGTERM or SIGHUP sent to
// withcontainerd (or typed at its terminal) reaches CMD exactly once,
// forwarded. When CMD exits, or on such a signal before CMD started, every
// pod is removed and the containerd is torn down, and a line names the pods
// removed; the exit status is CMD's
// (128+N if signal N ended it or the start). SIGPIPE is caught, not
// ignored (so CMD does not inherit SIG_IGN): a closed output pipe cannot
// kill withcontainerd before its teardown. Only SIGKILL can; then run
// "bedclean BASE" (BASE is -dir, /var/tmp/minikubelet-bed by default).
package main
