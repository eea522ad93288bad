package cgroups

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/qos"
)

// The kubelet's constants for turning CPU quantities into cgroup values
// (pkg/kubelet/cm/helpers_linux.go).
const (
	// MinShares is the smallest cpu.shares the kernel accepts, and what a
	// container or pod with no cpu request gets.
	MinShares = 2
	// MaxShares is the largest cpu.shares the kernel accepts.
	MaxShares = 262144
	// QuotaPeriod is the CFS period in microseconds (100ms), the kubelet's
	// default when the CPUCFSQuotaPeriod feature is off.
	QuotaPeriod = 100000

	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	// minQuota is the smallest CFS quota the kernel accepts (1ms).
	minQuota = 1000
)

// MilliCPUToShares is the kubelet's MilliCPUToShares: 1024 shares per CPU,
// at least MinShares (also what no request at all gets) and at most
// MaxShares.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota is the kubelet's MilliCPUToQuota: the CPU time allowed
// per period in microseconds, at least 1ms; 0 (no quota) when milliCPU is 0.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	quota := milliCPU * period / milliCPUToCPU
	if quota < minQuota {
		return minQuota
	}
	return quota
}

// ResourceConfig is what the agent writes into a pod's cgroup.
type ResourceConfig struct {
	// CPUShares is cpu.shares (v1) or its cpu.weight equivalent (v2).
	CPUShares uint64
	// CPUQuota is the CFS quota in microseconds per CPUPeriod; -1 means
	// no quota.
	CPUQuota  int64
	CPUPeriod uint64
	// Memory is the memory limit in bytes; 0 means no limit.
	Memory int64
	// Pids is pids.max; 0 leaves it as it is.
	Pids int64
}

// PodResources is the pod cgroup's configuration by the kubelet's rules
// (ResourceConfigForPod, with CFS quota enforced):
//   - Guaranteed: shares from the pod's cpu requests, a quota from its cpu
//     limits, and its memory limit.
//   - Burstable: shares from the cpu requests; a cpu quota only when every
//     container (init containers included) has a cpu limit, and a memory
//     limit only when every container has a memory limit.
//   - BestEffort: MinShares and nothing else.
//
// A pod's requests and limits are those of its containers as the scheduler
// counts them: regular containers and sidecars add up, each other init
// container may need more while it runs (with the sidecars started before
// it), the pod needs the largest of these; the pod overhead is added. A
// container's missing request defaults to its limit, as the API server
// defaults it. Pod-level resources (spec.resources) and hugepages are not
// looked at.
func PodResources(pod *v1.Pod) ResourceConfig {
	cpuReq := podTotal(pod, v1.ResourceCPU, request, true)
	cpuLim := podTotal(pod, v1.ResourceCPU, limit, false)
	memLim := podTotal(pod, v1.ResourceMemory, limit, false)
	cpuLimitsDeclared := everyContainer(pod, v1.ResourceCPU)
	memLimitsDeclared := everyContainer(pod, v1.ResourceMemory)

	cfg := ResourceConfig{CPUShares: MinShares, CPUQuota: -1, CPUPeriod: QuotaPeriod}
	switch qos.Class(pod) {
	case v1.PodQOSGuaranteed:
		cfg.CPUShares = MilliCPUToShares(cpuReq.MilliValue())
		cfg.CPUQuota = quotaOrNone(MilliCPUToQuota(cpuLim.MilliValue(), QuotaPeriod))
		cfg.Memory = memLim.Value()
	case v1.PodQOSBurstable:
		cfg.CPUShares = MilliCPUToShares(cpuReq.MilliValue())
		if cpuLimitsDeclared {
			cfg.CPUQuota = quotaOrNone(MilliCPUToQuota(cpuLim.MilliValue(), QuotaPeriod))
		}
		if memLimitsDeclared {
			cfg.Memory = memLim.Value()
		}
	}
	return cfg
}

// PodCPURequest is the pod's cpu request in millicores, counted as
// PodResources counts it.
func PodCPURequest(pod *v1.Pod) int64 {
	q := podTotal(pod, v1.ResourceCPU, request, true)
	return q.MilliValue()
}

// PodMemoryRequest is the pod's memory request in bytes, counted as
// PodResources counts requests.
func PodMemoryRequest(pod *v1.Pod) int64 {
	q := podTotal(pod, v1.ResourceMemory, request, true)
	return q.Value()
}

// Grown is, field by field, the larger of a and b: what a pod's cgroup is
// set to before its containers are resized from a to b, so that no
// container's new limit exceeds its pod's (cgroup v1 refuses a CFS quota
// above the parent's) and no limit shrinks before the containers have.
// No quota (-1) and no memory limit (0) are the largest.
func Grown(a, b ResourceConfig) ResourceConfig {
	out := ResourceConfig{CPUShares: max(a.CPUShares, b.CPUShares), CPUPeriod: b.CPUPeriod}
	switch {
	case a.CPUQuota < 0 || b.CPUQuota < 0:
		out.CPUQuota = -1
	default:
		out.CPUQuota = max(a.CPUQuota, b.CPUQuota)
	}
	if a.Memory != 0 && b.Memory != 0 {
		out.Memory = max(a.Memory, b.Memory)
	}
	return out
}

// PodRequest is the pod's request of name (cpu, memory,
// ephemeral-storage), counted as PodResources counts requests: what the
// node's admission and the eviction ranking compare with.
func PodRequest(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	return podTotal(pod, name, request, true)
}

// PodLimit is the pod's limit of name, counted as PodResources counts
// limits; declared is false when no container sets one (the pod has no
// limit of name).
func PodLimit(pod *v1.Pod, name v1.ResourceName) (q resource.Quantity, declared bool) {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[name]; ok {
				declared = true
			}
		}
	}
	return podTotal(pod, name, limit, false), declared
}

func quotaOrNone(q int64) int64 {
	if q == 0 {
		return -1
	}
	return q
}

// request is a container's request of name, its limit when unset.
func request(c *v1.Container, name v1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Requests[name]; ok {
		return q
	}
	return c.Resources.Limits[name]
}

func limit(c *v1.Container, name v1.ResourceName) resource.Quantity {
	return c.Resources.Limits[name]
}

// podTotal counts one resource over the pod (see PodResources). The
// overhead is added to requests always and to limits only when the pod
// has a limit of that resource, as the kubelet does.
func podTotal(pod *v1.Pod, name v1.ResourceName, get func(*v1.Container, v1.ResourceName) resource.Quantity, isRequest bool) resource.Quantity {
	var total, sidecars, initMax resource.Quantity
	for i := range pod.Spec.Containers {
		total.Add(get(&pod.Spec.Containers[i], name))
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q := get(c, name)
		var running resource.Quantity
		if kubecontainer.IsSidecar(c) {
			total.Add(q)
			sidecars.Add(q)
			running = sidecars.DeepCopy()
		} else {
			running = q.DeepCopy()
			running.Add(sidecars)
		}
		if running.Cmp(initMax) > 0 {
			initMax = running
		}
	}
	if initMax.Cmp(total) > 0 {
		total = initMax
	}
	if o, ok := pod.Spec.Overhead[name]; ok && (isRequest || !total.IsZero()) {
		total.Add(o)
	}
	return total
}

// everyContainer reports whether every container, init containers
// included, has a non-zero limit of name.
func everyContainer(pod *v1.Pod, name v1.ResourceName) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if q := cs[i].Resources.Limits[name]; q.IsZero() {
				return false
			}
		}
	}
	return true
}
