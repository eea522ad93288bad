package eviction

import (
	v1 "k8s.io/api/core/v1"
)

// Signal is an eviction signal: a resource of the node whose available
// amount thresholds are compared with (the kubelet's evictionapi.Signal).
type Signal string

// The signals the agent observes, as the kubelet names and computes them.
const (
	// SignalMemoryAvailable is the node's memory capacity less the root
	// cgroup's working set (usage less inactive page cache), not the
	// kernel's MemAvailable.
	SignalMemoryAvailable Signal = "memory.available"
	// SignalAllocatableMemoryAvailable is the pods cgroup's memory limit
	// (capacity less --kube-reserved and --system-reserved) less its
	// working set; a threshold on it exists with --enforce-node-allocatable
	// pods, equal to memory.available's hard one.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	// SignalNodeFsAvailable and SignalNodeFsInodesFree are the bytes
	// available to unprivileged users and the free inodes of the
	// filesystem of --root-dir.
	SignalNodeFsAvailable  Signal = "nodefs.available"
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable and SignalImageFsInodesFree are the same of
	// the runtime's image filesystem (CRI ImageFsInfo).
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalPIDAvailable is the smaller of kernel.pid_max and
	// kernel.threads-max less the tasks that exist.
	SignalPIDAvailable Signal = "pid.available"
)

// resourceInodes and resourcePIDs name what the inode and pid signals
// reclaim, in messages ("The node was low on resource: inodes.").
const (
	resourceInodes v1.ResourceName = "inodes"
	resourcePIDs   v1.ResourceName = "pids"
)

// signalResource maps each signal to the resource it reclaims; it also
// lists the valid signals.
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:            v1.ResourceMemory,
	SignalAllocatableMemoryAvailable: v1.ResourceMemory,
	SignalNodeFsAvailable:            v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           resourceInodes,
	SignalImageFsAvailable:           v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree:          resourceInodes,
	SignalPIDAvailable:               resourcePIDs,
}

// signalCondition maps each signal to the node condition its thresholds
// raise.
var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:            v1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
	SignalNodeFsAvailable:            v1.NodeDiskPressure,
	SignalNodeFsInodesFree:           v1.NodeDiskPressure,
	SignalImageFsAvailable:           v1.NodeDiskPressure,
	SignalImageFsInodesFree:          v1.NodeDiskPressure,
	SignalPIDAvailable:               v1.NodePIDPressure,
}

// The signals of the local storage limits, which no threshold names: they
// label kubelet_evictions as the kubelet's do.
const (
	signalEmptyDirFsLimit           = "emptydirfs.limit"
	signalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	signalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
)

// signalOrder is the order in which the thresholds met are acted on:
// memory first, as the kubelet; then the node's filesystem, the image
// filesystem and pids.
var signalOrder = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable,
	SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree,
	SignalPIDAvailable,
}
