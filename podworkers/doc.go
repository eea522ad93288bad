// Package podworkers runs one goroutine per pod UID and drives that pod's
// sandbox and containers in the runtime towards its spec. A pod's worker is
// the only writer of that pod's containers (DESIGN.md rule 2), so no two
// syncs of one pod ever overlap, and a slow pod never delays another
// (rule 1). One departure, on purpose: sandboxes are made a few at a time
// (sandbox_window.go, --max-parallel-sandbox-starts), because in a burst
// the runtime makes them no faster all at once, and a few at a time the
// first pods run much sooner and the last no later; a sandbox start that
// hangs gives its turn up after 10s, so it delays the pods behind it by
// that at most.
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
// (pod_remove.go). Before a sandbox is made, its runtime handler comes
// from the pod's RuntimeClass (sandbox_handler.go) and, for hostUsers:
// false, its user namespace from the pod's ID range where the handler
// supports them (sandbox_userns.go); either failing fails the sandbox as
// the kubelet's does (FailedCreatePodSandBox, containers held in
// ContainerCreating), so a pod never runs without what it asked for
// (DESIGN.md rule 9). Which sandbox and containers to create, start or kill
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
// down with the pod; image volumes' images are pulled beside the
// containers', and a failed one holds back the containers that mount it,
// image_volumes.go). Ephemeral containers (ephemeral.go) are started once
// in the ready sandbox and never again, in their target's PID namespace.
//
// # In-place resize
//
// A pod runs with the resources granted to it (resize.go, kept in
// SyncerConfig.Resources, agent/allocation): its spec's when its worker
// first syncs it, then each resize the node accepts. A spec whose cpu or
// memory differs from the grant asks for a resize, which the worker grants
// when the node's allocatable cpu and memory, less the other pods' grants,
// hold it; else the pod keeps its grant and reports PodResizePending
// (Infeasible when the pod alone exceeds the node, Deferred otherwise,
// with the kubelet's messages; a deferred resize is tried again at each
// sync and whenever another pod's grant shrinks or goes). A granted
// resize reports PodResizeInProgress until every running container runs
// with its grant: a container whose resizePolicy says RestartContainer for
// a resource that changed is restarted (restart count + 1); the others
// are updated in place through CRI UpdateContainerResources, after a
// check that no memory limit goes at or below what is used (refused, as
// by the kubelet, with the condition's reason Error, and retried), with
// the pod's cgroup grown to hold old and new limits before and set to the
// new ones after. The container spec hash leaves resources and resize
// policy out, so a resize is no spec change; containers an agent before
// in-place resize made carry a hash of their whole spec, and are adopted
// by comparing it with the resources they were made with.
//
// A static pod is resized by editing its manifest. DESIGN.md rule 7 makes
// an edit an UPDATE of the same pod, so an edit of only its containers'
// resources (or resize policies) is an in-place resize, decided and made
// as above, with the conditions on its mirror pod in node mode: the
// kubelet, which gives the edited pod a new UID, recreates the whole pod
// instead, and rule 7 exists to avoid exactly that. An edit that changes
// the pod's QoS class, which the apiserver refuses for an API pod's
// resize, gets the pod a new sandbox (and so new containers), since the
// pod's cgroup, its sandbox's cgroup parent, lives under its class's.
package podworkers
