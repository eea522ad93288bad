package shutdown

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// systemCriticalPriority is the scheduling API's SystemCriticalPriority:
// pods at or above it are critical.
const systemCriticalPriority = 2000000000

// group is pods terminated together, within period.
type group struct {
	name   string
	period time.Duration
	pods   []*v1.Pod
}

// groupPods splits pods as the kubelet does without
// shutdownGracePeriodByPodPriority: regular pods get gracePeriod -
// criticalPeriod and go first; critical pods get criticalPeriod, after.
func groupPods(pods []*v1.Pod, gracePeriod, criticalPeriod time.Duration) []group {
	regular := group{name: "regular", period: gracePeriod - criticalPeriod}
	critical := group{name: "critical", period: criticalPeriod}
	for _, pod := range pods {
		if isCritical(pod) {
			critical.pods = append(critical.pods, pod)
		} else {
			regular.pods = append(regular.pods, pod)
		}
	}
	return []group{regular, critical}
}

// podGracePeriod is the grace period, in seconds, of a pod of g: the
// group's period, or the pod's own terminationGracePeriodSeconds when it is
// shorter, as with the kubelet.
func (g group) podGracePeriod(pod *v1.Pod) int64 {
	grace := int64(g.period / time.Second)
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own < grace {
		grace = *own
	}
	return max(grace, 0)
}

// isCritical reports whether a pod is critical for a node shutdown: its
// priority is at least system-critical, or, as static pods have no
// priority resolved by an API server's admission, its priorityClassName is
// one of the two system classes.
func isCritical(pod *v1.Pod) bool {
	if p := pod.Spec.Priority; p != nil && *p >= systemCriticalPriority {
		return true
	}
	switch pod.Spec.PriorityClassName {
	case "system-node-critical", "system-cluster-critical":
		return true
	}
	return false
}
