package qos

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Class returns a pod's QoS class by the Kubernetes rules: BestEffort when
// no container (init or regular) requests or limits cpu or memory;
// Guaranteed when every container limits both cpu and memory and its
// requests, where set, equal its limits; Burstable otherwise.
func Class(pod *v1.Pod) v1.PodQOSClass {
	tracked := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
	anySet := false
	guaranteed := true
	check := func(c *v1.Container) {
		for _, name := range tracked {
			req, hasReq := nonZero(c.Resources.Requests, name)
			lim, hasLim := nonZero(c.Resources.Limits, name)
			if hasReq || hasLim {
				anySet = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	switch {
	case !anySet:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	default:
		return v1.PodQOSBurstable
	}
}

func nonZero(list v1.ResourceList, name v1.ResourceName) (resource.Quantity, bool) {
	q, ok := list[name]
	if !ok || q.IsZero() {
		return resource.Quantity{}, false
	}
	return q, true
}
