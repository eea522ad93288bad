package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ReasonOutOfPods is the kubelet's reason for a pod refused because the
// node runs --max-pods pods already.
const ReasonOutOfPods = "OutOfpods"

// MaxPods refuses a pod when the node already runs max pods (--max-pods,
// the Node's pods capacity), as the kubelet's resource fit does for the
// "pods" resource, with its reason and message.
func MaxPods(max int) Handler {
	return func(_ *v1.Pod, others []*v1.Pod) Result {
		if len(others)+1 <= max {
			return Admitted
		}
		return Result{
			Reason:  ReasonOutOfPods,
			Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", v1.ResourcePods, 1, len(others), max),
		}
	}
}
