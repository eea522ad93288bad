package status

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// The kubelet's floors below which cgroup values cannot tell cpu amounts
// apart (pkg/kubelet/cm): 2 shares, and a 1ms quota per 100ms period.
const (
	minShares        = 2
	minMilliCPULimit = 10
	sharesPerCPU     = 1024
	milliCPUToCPU    = 1000
)

// setResources fills cs.AllocatedResources and cs.Resources of container
// c, which the pod runs with (its allocated spec), as the kubelet reports
// them: allocatedResources are c's requests; resources are what the
// newest instance of c (latest, in the runtime) runs with. For a running
// container they are the cpu and memory the runtime reports for it (CRI
// ContainerStatus.resources: cpu request from its shares, cpu limit from
// its quota, memory limit), the memory request that was applied to it
// (actuated; CRI has none), and otherwise the values old (its previous
// API status) showed for the same container, else c's; a cpu amount the
// cgroup cannot tell from c's (both at or below the floors) shows c's. A
// container that does not run shows c's. Only the resources c names are
// shown, so a container without limits shows none.
func setResources(cs *v1.ContainerStatus, c *v1.Container, latest *kubecontainer.ContainerStatus, old *v1.ContainerStatus, actuated func(name string) (v1.ResourceRequirements, bool)) {
	if latest == nil {
		return
	}
	cs.AllocatedResources = c.Resources.Requests.DeepCopy()
	res := c.Resources.DeepCopy()
	cs.Resources = res
	if latest.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	var applied v1.ResourceRequirements
	var haveApplied bool
	if actuated != nil {
		applied, haveApplied = actuated(c.Name)
	}
	cpuLimit, cpuRequest, memLimit := fromRuntime(latest.Resources)
	var memRequest *resource.Quantity
	if cpuLimit == nil && cpuRequest == nil && memLimit == nil && haveApplied {
		// The runtime reports nothing: what was applied stands for it.
		cpuLimit, cpuRequest, memLimit = nonZero(applied.Limits, v1.ResourceCPU), nonZero(applied.Requests, v1.ResourceCPU), nonZero(applied.Limits, v1.ResourceMemory)
	}
	if haveApplied {
		memRequest = nonZero(applied.Requests, v1.ResourceMemory)
	}
	sameRunning := old != nil && old.State.Running != nil && old.ContainerID == cs.ContainerID && old.Resources != nil
	keepOld := func(name v1.ResourceName, oldList, list v1.ResourceList) {
		if !sameRunning {
			return
		}
		if q, ok := oldList[name]; ok {
			list[name] = q.DeepCopy()
		}
	}
	var oldRes v1.ResourceRequirements
	if sameRunning {
		oldRes = *old.Resources
	}
	if res.Limits != nil {
		switch {
		case cpuLimit == nil:
			keepOld(v1.ResourceCPU, oldRes.Limits, res.Limits)
		case cpuLimit.MilliValue() > minMilliCPULimit || res.Limits.Cpu().MilliValue() > minMilliCPULimit:
			res.Limits[v1.ResourceCPU] = *cpuLimit
		}
		if memLimit != nil {
			res.Limits[v1.ResourceMemory] = *memLimit
		} else {
			keepOld(v1.ResourceMemory, oldRes.Limits, res.Limits)
		}
	}
	if res.Requests != nil {
		switch {
		case cpuRequest == nil:
			keepOld(v1.ResourceCPU, oldRes.Requests, res.Requests)
		case cpuRequest.MilliValue() > minShares || res.Requests.Cpu().MilliValue() > minShares:
			res.Requests[v1.ResourceCPU] = *cpuRequest
		}
		if memRequest != nil {
			res.Requests[v1.ResourceMemory] = *memRequest
		} else {
			keepOld(v1.ResourceMemory, oldRes.Requests, res.Requests)
		}
	}
}

// fromRuntime converts the runtime's cgroup values back into the
// quantities they were made from, as the kubelet does; nil for what the
// runtime does not report.
func fromRuntime(r *runtimeapi.LinuxContainerResources) (cpuLimit, cpuRequest, memLimit *resource.Quantity) {
	if r == nil {
		return nil, nil, nil
	}
	if r.CpuPeriod > 0 && r.CpuQuota > 0 {
		if m := r.CpuQuota * milliCPUToCPU / r.CpuPeriod; m > 0 {
			cpuLimit = resource.NewMilliQuantity(m, resource.DecimalSI)
		}
	}
	if r.CpuShares >= minShares {
		m := int64(math.Ceil(float64(r.CpuShares*milliCPUToCPU) / sharesPerCPU))
		cpuRequest = resource.NewMilliQuantity(m, resource.DecimalSI)
	}
	if r.MemoryLimitInBytes > 0 {
		memLimit = resource.NewQuantity(r.MemoryLimitInBytes, resource.BinarySI)
	}
	return cpuLimit, cpuRequest, memLimit
}

// nonZero is list's quantity of name, nil when it is missing or zero.
func nonZero(list v1.ResourceList, name v1.ResourceName) *resource.Quantity {
	q, ok := list[name]
	if !ok || q.IsZero() {
		return nil
	}
	return &q
}
