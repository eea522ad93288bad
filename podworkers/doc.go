// Package podworkers runs one goroutine per pod UID and drives that pod's
// sandbox and containers in the runtime towards its spec. A pod's worker is
// the only writer of that pod's containers (DESIGN.md rule 2), so no two
// syncs of one pod ever overlap, and a slow pod never delays another.
//
// Each worker is a small state machine whose phase is derived from recorded
// timestamps:
//
//	          Create/Update/Sync                  Kill (or REMOVE)
//	(new) ---------------------> syncing ------------------------> terminating
//	                               ^                                    |
//	                               |                  every container   |
//	                               |                  and sandbox       v
//	                               |   re-added       stopped       terminated
//	                               +-------------------------------------+
//	                                (same UID)                           |
//	                                               removed from runtime  v
//	                                                                   (gone)
//
// Data enters through Workers.UpdatePod, called by the agent's syncLoop, and
// through the pleg.Cache, against which every sync runs. While the node shuts
// down, Workers.HoldStarts keeps any pod from starting or restarting. It leaves as CRI
// calls (sandbox run/stop/remove, container create/start/stop/remove, image
// pull) and as statuses handed to the status sink after each sync. With
// SyncerConfig.Cgroups, each pod's cgroup is made (and its limits kept up
// to date) at every sync, is its sandbox's cgroup parent, and is removed
// once the pod is terminated; a pod is not forgotten while it stays.
//
// The Syncer holds the pod sync itself, one file per verb: the sync of a
// running pod (pod_sync.go), running its sandbox (sandbox_run.go),
// starting, killing and removing containers (container_start.go,
// container_kill.go, container_remove.go), terminating the pod
// (pod_terminate.go) and removing it from the runtime and the node
// (pod_remove.go). Which sandbox and containers to create, start or kill
// is decided apart from doing it (actions.go: init containers, sidecars,
// restart policy and crash-loop back-off); beside them are the conversions
// from a v1 Pod to CRI
// configs (sandbox_config.go, container_config.go, resources.go,
// security.go; env through internal/downward), images with pull back-off
// and node credentials (images.go, image_prefetch.go), lifecycle hooks (hooks.go), termination messages
// (termination_message.go) and volumes (volumes.go: set up through the
// volumes package at every sync before anything else; a volume that fails
// holds the pod's containers in ContainerCreating with a message naming
// it; mounts go into each container's config; the pod's directory is torn
// down with the pod).
package podworkers
