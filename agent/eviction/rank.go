package eviction

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/qos"
)

// statsFunc finds a pod's stats in the summary the ranking was made from.
type statsFunc func(pod *v1.Pod) (statsapi.PodStats, bool)

// cmpFunc orders two pods: negative when p1 goes first.
type cmpFunc func(p1, p2 *v1.Pod) int

// rankFunc orders pods for eviction, first to evict first.
type rankFunc func(pods []*v1.Pod, stats statsFunc)

// orderBy sorts pods by each cmp in turn, the next breaking the ties of
// the one before; equal pods keep their order.
func orderBy(pods []*v1.Pod, cmps ...cmpFunc) {
	sort.SliceStable(pods, func(i, j int) bool {
		for _, cmp := range cmps {
			if c := cmp(pods[i], pods[j]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// cmpBool puts true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// byPriority puts lower priorities first.
func byPriority(p1, p2 *v1.Pod) int {
	a, b := qos.Priority(p1), qos.Priority(p2)
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// withStats compares two pods by f of their stats; a pod without stats
// goes first, as with the kubelet.
func withStats(stats statsFunc, f func(p1 *v1.Pod, s1 statsapi.PodStats, p2 *v1.Pod, s2 statsapi.PodStats) int) cmpFunc {
	return func(p1, p2 *v1.Pod) int {
		s1, ok1 := stats(p1)
		s2, ok2 := stats(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		return f(p1, s1, p2, s2)
	}
}

// memoryUsage is a pod's working set.
func memoryUsage(s statsapi.PodStats) resource.Quantity {
	if s.Memory == nil || s.Memory.WorkingSetBytes == nil {
		return *resource.NewQuantity(0, resource.BinarySI)
	}
	return *resource.NewQuantity(int64(*s.Memory.WorkingSetBytes), resource.BinarySI)
}

// rankMemory orders pods for memory pressure as the kubelet does: pods
// using more than they request first, then lower priority first, then the
// largest use above the request first. A BestEffort pod requests nothing,
// so it uses more than it requests as soon as it uses anything.
func rankMemory(pods []*v1.Pod, stats statsFunc) {
	orderBy(pods,
		withStats(stats, func(p1 *v1.Pod, s1 statsapi.PodStats, p2 *v1.Pod, s2 statsapi.PodStats) int {
			return cmpBool(exceeds(memoryUsage(s1), p1, v1.ResourceMemory), exceeds(memoryUsage(s2), p2, v1.ResourceMemory))
		}),
		byPriority,
		withStats(stats, func(p1 *v1.Pod, s1 statsapi.PodStats, p2 *v1.Pod, s2 statsapi.PodStats) int {
			a, b := aboveRequest(memoryUsage(s1), p1, v1.ResourceMemory), aboveRequest(memoryUsage(s2), p2, v1.ResourceMemory)
			return b.Cmp(a)
		}),
	)
}

// rankPIDs orders pods for pid pressure: lower priority first, then the
// most processes first.
func rankPIDs(pods []*v1.Pod, stats statsFunc) {
	orderBy(pods, byPriority, withStats(stats, func(_ *v1.Pod, s1 statsapi.PodStats, _ *v1.Pod, s2 statsapi.PodStats) int {
		a, b := processes(s1), processes(s2)
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	}))
}

func processes(s statsapi.PodStats) uint64 {
	if s.ProcessStats == nil || s.ProcessStats.ProcessCount == nil {
		return 0
	}
	return *s.ProcessStats.ProcessCount
}

// fsParts says which of a pod's uses of disk a ranking counts.
type fsParts struct {
	// rootfs: the containers' writable layers; logs: their logs;
	// volumes: the pod's local volumes (localVolumes).
	rootfs, logs, volumes bool
}

// The parts each filesystem holds: everything when the image filesystem
// is the node's; else the node's holds the logs and volumes and the
// image filesystem the writable layers, as the kubelet ranks them.
var (
	allParts     = fsParts{rootfs: true, logs: true, volumes: true}
	nodeFsParts  = fsParts{logs: true, volumes: true}
	imageFsParts = fsParts{rootfs: true}
)

// rankDisk orders pods for disk pressure on resourceName
// (ephemeral-storage or inodes), counting parts of their use: pods using
// more than they request first, then lower priority, then the largest use
// above the request.
func rankDisk(resourceName v1.ResourceName, parts fsParts) rankFunc {
	return func(pods []*v1.Pod, stats statsFunc) {
		orderBy(pods,
			withStats(stats, func(p1 *v1.Pod, s1 statsapi.PodStats, p2 *v1.Pod, s2 statsapi.PodStats) int {
				return cmpBool(exceeds(diskUsage(p1, s1, resourceName, parts), p1, resourceName), exceeds(diskUsage(p2, s2, resourceName, parts), p2, resourceName))
			}),
			byPriority,
			withStats(stats, func(p1 *v1.Pod, s1 statsapi.PodStats, p2 *v1.Pod, s2 statsapi.PodStats) int {
				// As the kubelet, above the ephemeral-storage request
				// whichever resource is ranked.
				a := aboveRequest(diskUsage(p1, s1, resourceName, parts), p1, v1.ResourceEphemeralStorage)
				b := aboveRequest(diskUsage(p2, s2, resourceName, parts), p2, v1.ResourceEphemeralStorage)
				return b.Cmp(a)
			}),
		)
	}
}

// exceeds reports whether use is above the pod's request of name.
func exceeds(use resource.Quantity, pod *v1.Pod, name v1.ResourceName) bool {
	return use.Cmp(cgroups.PodRequest(pod, name)) > 0
}

// aboveRequest is use less the pod's request of name (negative below it).
func aboveRequest(use resource.Quantity, pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	use.Sub(cgroups.PodRequest(pod, name))
	return use
}

// diskUsage is what the pod takes of the node's filesystem: bytes for
// ephemeral-storage, inodes for inodes.
func diskUsage(pod *v1.Pod, s statsapi.PodStats, resourceName v1.ResourceName, parts fsParts) resource.Quantity {
	var total uint64
	add := func(f *statsapi.FsStats) {
		switch {
		case f == nil:
		case resourceName == resourceInodes && f.InodesUsed != nil:
			total += *f.InodesUsed
		case resourceName != resourceInodes && f.UsedBytes != nil:
			total += *f.UsedBytes
		}
	}
	for i := range s.Containers {
		if parts.rootfs {
			add(s.Containers[i].Rootfs)
		}
		if parts.logs {
			add(s.Containers[i].Logs)
		}
	}
	if parts.volumes {
		local := localVolumes(pod)
		for i := range s.VolumeStats {
			if local[s.VolumeStats[i].Name] {
				add(&s.VolumeStats[i].FsStats)
			}
		}
	}
	if resourceName == resourceInodes {
		return *resource.NewQuantity(int64(total), resource.DecimalSI)
	}
	return *resource.NewQuantity(int64(total), resource.BinarySI)
}

// localVolumes names the pod's volumes that the kubelet's
// localVolumeNames counts on the node's filesystem: hostPath, emptyDir on
// disk and configMap (secret, downwardAPI and projected volumes are on a
// tmpfs).
func localVolumes(pod *v1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.HostPath != nil, v.ConfigMap != nil,
			v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault:
			out[v.Name] = true
		}
	}
	return out
}

// rankFor returns the ranking of signal's pressure; dedicatedImageFs says
// whether the runtime's image filesystem is not the node's.
func rankFor(s Signal, dedicatedImageFs bool) rankFunc {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return rankMemory
	case SignalPIDAvailable:
		return rankPIDs
	}
	parts := allParts
	if dedicatedImageFs {
		parts = nodeFsParts
		if s == SignalImageFsAvailable || s == SignalImageFsInodesFree {
			parts = imageFsParts
		}
	}
	return rankDisk(signalResource[s], parts)
}
