package podworkers

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// Ephemeral containers, as the kubelet runs them. They come in an update of
// an API pod (the ephemeralcontainers subresource adds them; static pods
// cannot have any, agent/manifest refuses them), and:
//
//   - each one is started once, in the pod's ready sandbox, before the
//     other containers of that sync, even while init containers run; never
//     in a sandbox being created, never in a pod that is finished or
//     terminating;
//   - it is never restarted: not when it exits, not when the pod gets a new
//     sandbox. It "ran" once the runtime holds an instance of it, or the
//     pod's API status shows one (the runtime forgets it when its sandbox
//     is removed);
//   - with targetContainerName it shares the PID namespace of that
//     container's newest instance (CRI NamespaceMode TARGET), unless the pod
//     shares one PID namespace (shareProcessNamespace, hostPID) already;
//     while the target has never run, it waits with
//     CreateContainerConfigError;
//   - it is killed with the pod, and its last instance is kept (and its
//     log) while the pod lives.

// ephemeralContainers adds to p.a the pod's ephemeral containers that never
// ran, before the containers already there (the kubelet starts them first).
// Call it once the sandbox is known ready, and not when the pod is being
// killed.
func (p *planner) ephemeralContainers() {
	pod, status, a := p.pod, p.status, p.a
	var starts []containerToStart
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if ephemeralRan(pod, status, ec.Name) {
			continue
		}
		cts := containerToStart{Container: kubecontainer.EphemeralSpec(ec)}
		if name := ec.TargetContainerName; name != "" {
			target := status.FindContainer(name)
			if target == nil {
				a.Waiting[ec.Name] = kubecontainer.Waiting{
					Reason:  "CreateContainerConfigError",
					Message: fmt.Sprintf("unable to find target container %s", name),
				}
				continue
			}
			cts.TargetID = target.ID
		}
		starts = append(starts, cts)
		a.Waiting[ec.Name] = kubecontainer.Waiting{Reason: "ContainerCreating"}
	}
	if len(starts) > 0 {
		a.ContainersToStart = append(starts, a.ContainersToStart...)
	}
}

// ephemeralRan reports whether the ephemeral container called name ran (or
// was created) at some time: the runtime holds an instance of it, or the
// pod's API status gives it a container ID or a state past waiting.
func ephemeralRan(pod *v1.Pod, status *kubecontainer.PodStatus, name string) bool {
	if status.FindContainer(name) != nil {
		return true
	}
	for _, cs := range pod.Status.EphemeralContainerStatuses {
		if cs.Name == name && (cs.ContainerID != "" || cs.State.Running != nil || cs.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// ephemeralNames adds the names of pod's ephemeral containers to names:
// they are in the spec, and their dead instances are kept.
func ephemeralNames(pod *v1.Pod, names map[string]bool) {
	for i := range pod.Spec.EphemeralContainers {
		names[pod.Spec.EphemeralContainers[i].Name] = true
	}
}

// shareTargetPID makes the container of cfg join the PID namespace of the
// container targetID (an ephemeral container's targetContainerName), as
// the kubelet does: only when it would otherwise get a PID namespace of
// its own.
func shareTargetPID(cfg *runtimeapi.ContainerConfig, targetID string) {
	if targetID == "" {
		return
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return
	}
	ns.Pid = runtimeapi.NamespaceMode_TARGET
	ns.TargetId = targetID
}
