// Package eviction protects the node before the kernel has to: it is the
// kubelet's node-pressure eviction manager. It measures the eviction
// signals, keeps the node's pressure conditions, reclaims what the node
// can, evicts pods one at a time, and refuses new pods under pressure.
//
// # Signals and thresholds
//
// Each round (every Config.MonitoringPeriod, 10s as the kubelet's, and at
// once when a memory notification fires) reads a fresh Summary
// (agent/stats) and measures the signals as the kubelet does:
//
//	memory.available             node capacity - root cgroup working set
//	allocatableMemory.available  pods cgroup limit - its working set
//	nodefs.available, .inodesFree   the root dir's filesystem (statfs)
//	imagefs.available, .inodesFree  the runtime's (CRI ImageFsInfo)
//	pid.available                min(pid_max, threads-max) - tasks
//
// Thresholds (ParseThresholds: --eviction-hard, --eviction-soft with
// --eviction-soft-grace-period, --eviction-minimum-reclaim, and the
// config file's fields) are met when a signal is below their value; a
// soft one acts once met for its grace period; once acted on, a threshold
// holds until the signal is its minimum reclaim above it. A threshold met
// on figures no newer than the last round's acts no more (the usage of a
// pod being evicted is not counted twice).
//
// # Conditions
//
// MemoryPressure, DiskPressure and PIDPressure (Pressure) hold while a
// threshold of theirs is met, grace periods aside, and for
// Config.PressureTransitionPeriod after. Admit refuses new pods under
// pressure as the kubelet's admission does (reason Evicted).
//
// # Acting
//
// A round first evicts, with no grace, every pod over a local storage
// limit: an emptyDir over its sizeLimit, a pod over its containers'
// ephemeral-storage limits, a container over its own, with the kubelet's
// messages. Else, for the first threshold met (memory ones first), it
// reclaims node-level resources for disk signals: the dead containers of
// finished pods (OpRetire), then every unused image at once
// (Config.Images); if that brings every threshold back above its minimum
// reclaim, no pod is evicted. Else the active pods are ranked (memory:
// use above request first, then lower priority, then the most memory
// above the request, so BestEffort before Burstable before Guaranteed;
// pids: priority, then process count; disk: as memory, on writable
// layers, logs and local volumes) and the first that is not critical is
// evicted: killed with no grace for a hard threshold (the kubelet gives 1
// second, raised to its 2-second minimum per container) or with
// min(--eviction-max-pod-grace-period, its own) for a soft one. Its
// status becomes phase Failed, reason Evicted, with the DisruptionTarget
// condition and the kubelet's message naming the resource, the threshold,
// what was available and each container using more than it requests; a
// Warning event Evicted records it, and kubelet_evictions counts it by
// signal. The manager then waits, at most 30s, for the node to hold
// nothing of the pod before the next round.
//
// The manager never calls a pod's worker itself (DESIGN.md rule 1): it
// sends Requests (OpEvict, OpRestart, OpRetire) to the syncLoop, which
// answers each.
//
// # Critical pods and static pods
//
// A pod whose priority is system-critical, by spec.priority or by the
// name system-node-critical or system-cluster-critical (static pods have
// no API server to resolve it), is never evicted and always admitted. The
// kubelet also counts every static pod as critical, so a standalone
// kubelet evicts nothing at all. Here a static pod is evicted by the same
// rules unless it is critical by priority, and started again (OpRestart)
// once the pressure it was evicted for has cleared for the transition
// period and the node admits it, with a back-off: at once the first time,
// then at least 10s after its eviction, doubling up to 5m, starting over
// after 10m without an eviction. Config.StaticPodsCritical
// (--evict-static-pods=false) restores the kubelet's rule. A restarted
// agent forgets which static pods it evicted: it starts them all.
//
// # Memory notifications
//
// With Config.Notifications the kernel wakes the manager between rounds
// (CgroupNotifications): on cgroup v1 a memory threshold on the root
// cgroup (memory.available) and on the pods cgroup
// (allocatableMemory.available), set every 10s at the usage where the
// threshold is crossed; on cgroup v2, which has no usage threshold, a PSI
// trigger on the same cgroups' memory stalls.
//
// Data enters as Summaries (Config.Stats), the node's pods
// (Config.Pods), images reclaimed (Config.Images) and kernel
// notifications; it leaves as Requests, events, the eviction counter,
// Pressure and Admit.
package eviction
