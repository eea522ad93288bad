package status

import (
	"fmt"
	"slices"
	"strings"

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
	// ResizeConditions are the pod's PodResizePending and
	// PodResizeInProgress conditions, reported unless the pod has
	// finished. Actuated returns the resources applied to a container
	// (for the memory request it runs with, which CRI does not report);
	// nil: none known.
	ResizeConditions []v1.PodCondition
	Actuated         func(name string) (v1.ResourceRequirements, bool)
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
		// The generation of the spec this status was computed from, as
		// the kubelet reports it (PodObservedGenerationTracking, on by
		// default since 1.34).
		ObservedGeneration: pod.Generation,
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
	// A container not created yet waits as ContainerCreating, or as
	// PodInitializing in a pod with init containers (init containers
	// included), as the kubelet reports it.
	notCreated := kubecontainer.Waiting{Reason: "ContainerCreating"}
	if len(pod.Spec.InitContainers) > 0 {
		notCreated.Reason = "PodInitializing"
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(c, rs, in.Waiting, notCreated, in.RuntimeName, in.Probes)
		setResources(&cs, c, rs.FindContainer(c.Name), findStatus(in.Old.InitContainerStatuses, c.Name), in.Actuated)
		// A regular init container is ready once it succeeded (not while
		// it runs), as the kubelet's prober reports it; a sidecar's
		// readiness is its probes'.
		if !kubecontainer.IsSidecar(c) {
			t := cs.State.Terminated
			cs.Ready = t != nil && t.ExitCode == 0
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := containerStatus(c, rs, in.Waiting, notCreated, in.RuntimeName, in.Probes)
		setResources(&cs, c, rs.FindContainer(c.Name), findStatus(in.Old.ContainerStatuses, c.Name), in.Actuated)
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.EphemeralContainerStatuses = ephemeralStatuses(in, notCreated)
	st.Phase = phase(pod, st.InitContainerStatuses, st.ContainerStatuses)
	if in.Old.Phase == v1.PodSucceeded || in.Old.Phase == v1.PodFailed {
		st.Phase = in.Old.Phase // a terminal phase never changes back
	}
	st.Conditions = conditions(pod, rs, &st, in.Old, in.Now)
	if st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed {
		// As the kubelet: a finished pod is no longer being resized.
		st.Conditions = append(st.Conditions, in.ResizeConditions...)
	}
	return st
}

// findStatus returns the status of the container called name, or nil.
func findStatus(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// containerStatus is c's status; notCreated is why it waits when the
// runtime has no container of it and nothing holds it back.
func containerStatus(c *v1.Container, rs *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting, notCreated kubecontainer.Waiting, runtimeName string, probes Probes) v1.ContainerStatus {
	out := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	all := rs.ContainersNamed(c.Name)
	w, held := waiting[c.Name]
	if len(all) == 0 {
		if !held {
			w = notCreated
		}
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		return out
	}
	latest := all[0]
	out.RestartCount = int32(latest.RestartCount)
	out.ImageID = latest.ImageRef
	out.ContainerID = containerID(runtimeName, latest.ID)
	out.User = containerUser(latest.User)
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
			w = notCreated
		}
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
	}
	return out
}

// containerUser is the identity the runtime says the container's process
// runs with (containerd 2.x reports it), as the kubelet copies it into
// status.containerStatuses[].user; nil when the runtime says nothing.
func containerUser(u *runtimeapi.ContainerUser) *v1.ContainerUser {
	l := u.GetLinux()
	if l == nil {
		return nil
	}
	return &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: l.GetUid(), GID: l.GetGid(), SupplementalGroups: l.GetSupplementalGroups()}}
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
// a sidecar (restartPolicy Always), has started: passed its startup probe
// once, as the kubelet counts it (a sidecar that ran before and restarts
// keeps the pod initialized).
func initialized(pod *v1.Pod, inits []v1.ContainerStatus) bool {
	for i, cs := range inits {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			startedNow := cs.State.Running != nil && (cs.Started == nil || *cs.Started)
			if !startedNow && cs.LastTerminationState.Terminated == nil && cs.State.Terminated == nil {
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

// Reasons of the conditions the agent sets, as the kubelet's.
const (
	reasonPodCompleted             = "PodCompleted"
	reasonPodFailed                = "PodFailed"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// conditions computes PodScheduled, PodReadyToStartContainers, Initialized,
// ContainersReady and Ready with the kubelet's reasons and messages,
// keeping a condition's transition time while its status does not change.
func conditions(pod *v1.Pod, rs *kubecontainer.PodStatus, st *v1.PodStatus, old v1.PodStatus, now metav1.Time) []v1.PodCondition {
	sandboxReady := len(rs.Sandboxes) > 0 && rs.Sandboxes[0].State == runtimeapi.PodSandboxState_SANDBOX_READY
	ready := containersReadyCondition(pod, st)
	ready.Type = v1.ContainersReady
	podReady := podReadyCondition(pod, ready, pod.Status.Conditions)
	conds := []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		{Type: v1.PodReadyToStartContainers, Status: conditionStatus(sandboxReady)},
		initializedCondition(pod, st),
		ready,
		podReady,
	}
	for i := range conds {
		c := &conds[i]
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = now
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return conds
}

// podReadyCondition is the kubelet's Ready: ContainersReady's status,
// reason and message while that is not True; else False, with reason
// ReadinessGatesNotReady and the kubelet's message for each of
// spec.readinessGates whose condition (set by others, found in
// conditions: the API's) is missing or not True; else True.
func podReadyCondition(pod *v1.Pod, containersReady v1.PodCondition, conditions []v1.PodCondition) v1.PodCondition {
	c := containersReady
	c.Type = v1.PodReady
	if c.Status != v1.ConditionTrue {
		return c
	}
	var unready []string
	for _, gate := range pod.Spec.ReadinessGates {
		i := slices.IndexFunc(conditions, func(c v1.PodCondition) bool { return c.Type == gate.ConditionType })
		switch {
		case i < 0:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(gate.ConditionType)))
		case conditions[i].Status != v1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(gate.ConditionType), conditions[i].Status))
		}
	}
	if len(unready) > 0 {
		c.Status, c.Reason, c.Message = v1.ConditionFalse, reasonReadinessGatesNotReady, strings.Join(unready, ", ")
	}
	return c
}

// NeedsReadinessSync reports whether the Ready condition the API shows for
// pod is not what its readiness gates and the rest of its API status make
// it, as the kubelet's NeedToReconcilePodReadiness: a condition others set
// for a gate changed, and the pod must be synced for its Ready to follow.
// False for a pod without readiness gates or without a Ready condition.
func NeedsReadinessSync(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	i := slices.IndexFunc(pod.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.PodReady })
	if i < 0 {
		return false
	}
	want := podReadyCondition(pod, containersReadyCondition(pod, &pod.Status), pod.Status.Conditions)
	cur := pod.Status.Conditions[i]
	return cur.Status != want.Status || cur.Message != want.Message
}

func conditionStatus(ok bool) v1.ConditionStatus {
	if ok {
		return v1.ConditionTrue
	}
	return v1.ConditionFalse
}

// initializedCondition is the kubelet's Initialized: true once every init
// container succeeded (a sidecar: started), or once a regular container
// has run (sidecars restarting do not undo it); else false, naming the
// init containers not done.
func initializedCondition(pod *v1.Pod, st *v1.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	if st.Phase == v1.PodSucceeded {
		c.Reason = reasonPodCompleted
		return c
	}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return c
		}
	}
	var incomplete []string
	for i, cs := range st.InitContainerStatuses {
		done := cs.Ready
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			done = cs.Started != nil && *cs.Started
		}
		if !done {
			incomplete = append(incomplete, cs.Name)
		}
	}
	if len(incomplete) > 0 {
		c.Status = v1.ConditionFalse
		c.Reason = reasonContainersNotInitialized
		c.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	return c
}

// containersReadyCondition is the kubelet's ContainersReady (and the
// base of Ready): true when every regular container
// and sidecar is ready; false with PodCompleted or PodFailed in a terminal
// phase, else naming the containers not ready. Its Type is left for the
// caller.
func containersReadyCondition(pod *v1.Pod, st *v1.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Status: v1.ConditionFalse}
	switch st.Phase {
	case v1.PodSucceeded:
		c.Reason = reasonPodCompleted
		return c
	case v1.PodFailed:
		c.Reason = reasonPodFailed
		return c
	}
	var unready []string
	for i, cs := range st.InitContainerStatuses {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) && !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	if len(unready) > 0 {
		c.Reason = reasonContainersNotReady
		c.Message = fmt.Sprintf("containers with unready status: %s", unready)
		return c
	}
	c.Status = v1.ConditionTrue
	return c
}
