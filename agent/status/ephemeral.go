package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// ephemeralStatuses are the statuses of pod's ephemeral containers, in
// spec order, as the kubelet reports them: states, restart count, image
// and IDs as for the other containers, never ready and with no started
// field (no probe runs in them). One the runtime no longer holds (its
// sandbox was removed) keeps the terminated state old gave it: it never
// runs again.
func ephemeralStatuses(in GenerateInput, notCreated kubecontainer.Waiting) []v1.ContainerStatus {
	pod := in.Pod
	if len(pod.Spec.EphemeralContainers) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		c := kubecontainer.EphemeralSpec(&pod.Spec.EphemeralContainers[i])
		if len(in.Runtime.ContainersNamed(c.Name)) == 0 {
			if old := oldStatus(in.Old.EphemeralContainerStatuses, c.Name); old != nil && old.State.Terminated != nil {
				out = append(out, *old.DeepCopy())
				continue
			}
		}
		cs := containerStatus(c, in.Runtime, in.Waiting, notCreated, in.RuntimeName, nil)
		cs.Ready = false
		cs.Started = nil
		out = append(out, cs)
	}
	return out
}

func oldStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
