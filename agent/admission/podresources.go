package admission

import (
	v1 "k8s.io/api/core/v1"
)

// ReasonPodLevelResources is the reason for a pod that sets pod-level
// resources (spec.resources). The kubelet has none: it honours them
// (PodLevelResources, beta in v1.34). This node sizes a pod's cgroup from
// its containers only and cannot resize it by a pod-level figure, so it
// refuses the pod rather than run it with limits it did not ask for
// (DESIGN.md rule 9).
const ReasonPodLevelResources = "PodLevelResourcesNotSupported"

// NoPodLevelResources refuses every pod with a spec.resources request or
// limit.
func NoPodLevelResources() Handler {
	return func(pod *v1.Pod, _ []*v1.Pod) Result {
		r := pod.Spec.Resources
		if r == nil || (len(r.Requests) == 0 && len(r.Limits) == 0) {
			return Admitted
		}
		return Result{
			Reason: ReasonPodLevelResources,
			Message: "spec.resources: pod-level resources are not supported by this node (minikubelet sizes a pod's cgroup from its containers' resources); " +
				"set the requests and limits on the containers instead",
		}
	}
}
