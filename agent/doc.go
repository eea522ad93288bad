// Package agent wires minikubelet's parts together and owns the syncLoop;
// its sub-packages own everything else.
//
// New builds every part that needs no container runtime, once, in
// dependency order: the pod sources (agent/sources/..., and node mode's
// agent/cluster), the merge (agent/podconfig), the pods the sources want
// (agent/podmanager), the PLEG cache, the HTTP endpoints' configuration
// (agent/server, agent/podview), the health checks (health.go) and the
// service manager's loop (agent/notify). Run starts them, connects to the
// runtime, and then builds the parts that need it with one constructor,
// newRuntimeParts (runtime.go): cgroups and stats, volumes, the prober,
// the status manager, the pod workers, the PLEG, housekeeping
// (agent/housekeeping), log rotation, image GC, node-pressure eviction
// (agent/eviction; node allocatable's limits from agent/allocatable),
// graceful node shutdown and node mode's reporters. It publishes them once, in one atomic
// pointer that the HTTP endpoints and the health checks read, imports the
// node's image archives (agent/imageimport), starts them and runs the
// syncLoop. No field of Agent changes after New, and no part is handed
// the Agent.
//
// The syncLoop (syncloop.go) is where the merge's ADD / UPDATE / DELETE /
// REMOVE / RECONCILE operations, PLEG events, probe results, graceful
// shutdown's and the eviction manager's requests and the sync and
// housekeeping ticks meet. It only dispatches (DESIGN.md rule 1): it
// records the pods the sources want and hands every piece of work to the
// pod's worker (podworkers), which does all runtime calls. A pod new to
// the node first goes through admission (admit.go, agent/admission: the
// eviction manager's pressure check first, node allocatable's resource
// fit after the pods count): a refused pod gets no worker, only the
// status and event the kubelet gives it.
//
// Run returns when ctx is cancelled. Stopping the agent leaves the pods
// running, as the kubelet does.
package agent
