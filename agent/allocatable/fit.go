package allocatable

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/cgroups"
)

// The kubelet's admission reasons for a pod whose requests do not fit.
const (
	OutOfCPU              = "OutOfcpu"
	OutOfMemory           = "OutOfmemory"
	OutOfEphemeralStorage = "OutOfephemeral-storage"
)

// fitted are the resources Fit checks, in the scheduler's order, with the
// reason of each.
var fitted = []struct {
	name   v1.ResourceName
	reason string
}{
	{v1.ResourceCPU, OutOfCPU},
	{v1.ResourceMemory, OutOfMemory},
	{v1.ResourceEphemeralStorage, OutOfEphemeralStorage},
}

// Fit returns the kubelet's resource admission check against
// allocatable: a pod is refused when its request of cpu, memory or
// ephemeral-storage (as the scheduler counts it: containers, init
// containers and overhead) is above what allocatable leaves once the
// others' requests are counted. The refusal is the first resource short,
// with the kubelet's reason and message: "Node didn't have enough
// resource: cpu, requested: 500, used: 1800, capacity: 2000" (cpu in
// millicores, the others in bytes). A pod that requests nothing fits.
func Fit(allocatable v1.ResourceList) func(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string) {
	return func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
		for _, r := range fitted {
			capacity, ok := allocatable[r.name]
			if !ok {
				continue
			}
			requested := value(cgroups.PodRequest(pod, r.name), r.name)
			if requested == 0 {
				continue
			}
			var used int64
			for _, o := range others {
				used += value(cgroups.PodRequest(o, r.name), r.name)
			}
			if requested > value(capacity, r.name)-used {
				return false, r.reason, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
					r.name, requested, used, value(capacity, r.name))
			}
		}
		return true, "", ""
	}
}

// value is q in the scheduler's unit of name: millicores for cpu.
func value(q resource.Quantity, name v1.ResourceName) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}
