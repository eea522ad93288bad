package status

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/qos"
)

// GenerateInput is what Generate computes a pod's API status from.
type GenerateInput struct {
	Pod     *v1.Pod
	Runtime *kubecontainer.PodStatus
	// Waiting says why containers that do not run are held back.
	Waiting map[string]kubecontainer.Waiting
	// Old is the previous API status: it keeps the start time, the
	// conditions' transition times and a terminal phase.
	Old         v1.PodStatus
	Now         metav1.Time
	HostIP      string
	RuntimeName string
	// Probes says whether running containers have started and are ready;
	// nil means every running container is both.
	Probes Probes
}

// Probes is what a status needs of the prober.
type Probes interface {
	// Started reports whether container c, running as containerID (the
	// runtime's ID), has passed its startup probe, if it has one.
	Started(c *v1.Container, containerID string) bool
	// Ready reports whether it has started and passed its readiness probe,
	// if it has one.
	Ready(c *v1.Container, containerID string) bool
}

// Generate computes a pod's API status the way the kubelet does.
func Generate(in GenerateInput) v1.PodStatus {
	pod, rs := in.Pod, in.Runtime
	st := v1.PodStatus{
		StartTime: in.Old.StartTime,
		QOSClass:  qos.Class(pod),
	}
	if in.HostIP != "" {
		st.HostIP = in.HostIP
		st.HostIPs = []v1.HostIP{{IP: in.HostIP}}
	}
	ips := rs.IPs
	if pod.Spec.HostNetwork && in.HostIP != "" {
		ips = []string{in.HostIP}
	}
	for _, ip := range ips {
		st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		st.PodIP = ips[0]
	}
	for i := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(&pod.Spec.InitContainers[i], rs, in.Waiting, in.RuntimeName, in.Probes))
	}
	for i := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(&pod.Spec.Containers[i], rs, in.Waiting, in.RuntimeName, in.Probes))
	}
	st.Phase = phase(pod, st.InitContainerStatuses, st.ContainerStatuses)
	if in.Old.Phase == v1.PodSucceeded || in.Old.Phase == v1.PodFailed {
		st.Phase = in.Old.Phase // a terminal phase never changes back
	}
	st.Conditions = conditions(pod, rs, &st, in.Old, in.Now)
	return st
}

func containerStatus(c *v1.Container, rs *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting, runtimeName string, probes Probes) v1.ContainerStatus {
	out := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	all := rs.ContainersNamed(c.Name)
	w, held := waiting[c.Name]
	if len(all) == 0 {
		if !held {
			w = kubecontainer.Waiting{Reason: "ContainerCreating"}
		}
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		return out
	}
	latest := all[0]
	out.RestartCount = int32(latest.RestartCount)
	out.ImageID = latest.ImageRef
	out.ContainerID = containerID(runtimeName, latest.ID)
	switch latest.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		out.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(latest.StartedAt)}
		started, ready := true, true
		if probes != nil {
			started, ready = probes.Started(c, latest.ID), probes.Ready(c, latest.ID)
		}
		out.Ready = ready
		out.Started = &started
		if len(all) > 1 && all[1].State == runtimeapi.ContainerState_CONTAINER_EXITED {
			out.LastTerminationState.Terminated = terminated(all[1], runtimeName)
		}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		if held {
			// Waiting to be started again: the exit is the last state.
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			out.LastTerminationState.Terminated = terminated(latest, runtimeName)
		} else {
			out.State.Terminated = terminated(latest, runtimeName)
			if len(all) > 1 && all[1].State == runtimeapi.ContainerState_CONTAINER_EXITED {
				out.LastTerminationState.Terminated = terminated(all[1], runtimeName)
			}
		}
		started := false
		out.Started = &started
	default:
		if !held {
			w = kubecontainer.Waiting{Reason: "ContainerCreating"}
		}
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
	}
	return out
}

func terminated(cs *kubecontainer.ContainerStatus, runtimeName string) *v1.ContainerStateTerminated {
	reason := cs.Reason
	if reason == "" {
		reason = "Error"
		if cs.ExitCode == 0 {
			reason = "Completed"
		}
	}
	return &v1.ContainerStateTerminated{
		ExitCode:    cs.ExitCode,
		Reason:      reason,
		Message:     cs.Message,
		StartedAt:   metav1.NewTime(cs.StartedAt),
		FinishedAt:  metav1.NewTime(cs.FinishedAt),
		ContainerID: containerID(runtimeName, cs.ID),
	}
}

func containerID(runtimeName, id string) string {
	if runtimeName == "" {
		runtimeName = "containerd"
	}
	return runtimeName + "://" + id
}

// initialized reports whether every init container has succeeded, or, for
// a sidecar (restartPolicy Always), has started.
func initialized(pod *v1.Pod, inits []v1.ContainerStatus) bool {
	for i, cs := range inits {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			if cs.State.Running == nil && cs.LastTerminationState.Terminated == nil && cs.State.Terminated == nil {
				return false // never started
			}
			continue
		}
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}

// phase applies the kubelet's rules: Pending while init containers run (or
// Failed when one failed under restartPolicy Never), then by the regular
// containers' states.
func phase(pod *v1.Pod, inits, statuses []v1.ContainerStatus) v1.PodPhase {
	if !initialized(pod, inits) {
		for i, cs := range inits {
			if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
				continue
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
				return v1.PodFailed
			}
		}
		return v1.PodPending
	}
	var waiting, running, stopped, succeeded int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++ // restarting
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		switch {
		case pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		default:
			return v1.PodRunning
		}
	}
	return v1.PodPending
}

// conditions computes PodScheduled, PodReadyToStartContainers, Initialized,
// ContainersReady and Ready, keeping a condition's transition time while
// its status does not change.
func conditions(pod *v1.Pod, rs *kubecontainer.PodStatus, st *v1.PodStatus, old v1.PodStatus, now metav1.Time) []v1.PodCondition {
	allReady := len(st.ContainerStatuses) > 0
	for _, cs := range st.ContainerStatuses {
		allReady = allReady && cs.Ready
	}
	for i, cs := range st.InitContainerStatuses {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			allReady = allReady && cs.Ready // sidecars count for readiness
		}
	}
	sandboxReady := len(rs.Sandboxes) > 0 && rs.Sandboxes[0].State == runtimeapi.PodSandboxState_SANDBOX_READY
	succeeded := st.Phase == v1.PodSucceeded
	conds := []struct {
		t  v1.PodConditionType
		ok bool
	}{
		{v1.PodScheduled, true},
		{v1.PodReadyToStartContainers, sandboxReady},
		{v1.PodInitialized, initialized(pod, st.InitContainerStatuses)},
		{v1.ContainersReady, allReady && !succeeded},
		{v1.PodReady, allReady && !succeeded},
	}
	out := make([]v1.PodCondition, 0, len(conds))
	for _, c := range conds {
		status := v1.ConditionFalse
		if c.ok {
			status = v1.ConditionTrue
		}
		cond := v1.PodCondition{Type: c.t, Status: status, LastTransitionTime: now}
		for _, o := range old.Conditions {
			if o.Type == c.t && o.Status == status {
				cond.LastTransitionTime = o.LastTransitionTime
			}
		}
		if !c.ok && (c.t == v1.ContainersReady || c.t == v1.PodReady) {
			cond.Reason = "ContainersNotReady"
		}
		out = append(out, cond)
	}
	return out
}
