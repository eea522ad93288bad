// Package allocation keeps what the node has granted each pod's containers
// and what it has applied to them: the state behind in-place pod resize,
// the kubelet's allocation and actuated checkpoints in one.
//
// Three things are kept per pod UID:
//
//   - allocated: the resources the node granted each container (its spec's
//     when the pod was first synced, then each resize the node accepted),
//     with the pod's cpu and memory requests as allocated, which other
//     pods' resizes are checked against;
//   - actuated: the resources last applied to each container (when it was
//     created, then by each CRI UpdateContainerResources); a running
//     container whose actuated resources differ from its allocated ones is
//     being resized;
//   - the PodResizePending and PodResizeInProgress conditions, as the
//     kubelet's status manager keeps them (in memory only: a restarted
//     agent derives them again at each pod's first sync).
//
// Allocated and actuated resources are written to one JSON file
// (Config.Path, <root-dir>/pod_resources_state.json) at every change,
// atomically, so that a restarted agent knows what it granted and applied
// and neither grants a pending resize without checking it nor restarts a
// container whose resources it has already changed. The file is the
// agent's own, not the kubelet's allocated_pods_state and
// actuated_pods_state (whose checksummed format a kubelet refuses to start
// on when it cannot read it): a kubelet started on the same root dir
// starts from its pods' specs. A file that cannot be read is logged, set
// aside (renamed with a .bad suffix) and started over empty.
//
// Data enters from pod workers (podworkers.Syncer decides and records, one
// pod at a time per worker) and leaves to them, to the status manager
// (conditions and actuated memory requests, agent/status) and to the file.
// When an allocation shrinks or goes (Release), Config.OnFreed is told of
// the pods whose resize is deferred, so that they try again at once
// rather than at their next periodic sync. Run forgets, every minute, the
// pods Config.InUse no longer reports: what an agent that was down while
// pods went left in the file.
package allocation
