package podworkers

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/qos"
)

// podActions is what one sync must do to bring the runtime in line with a
// pod's spec. computePodActions derives it from the spec and the runtime
// status alone; it calls nothing.
type podActions struct {
	// KillPod: stop every container and sandbox first (the sandbox is
	// gone, not ready or no longer matches the spec).
	KillPod bool
	// CreateSandbox with Attempt; else SandboxID is the sandbox to use.
	CreateSandbox bool
	Attempt       uint32
	// SandboxReason says why a sandbox is created ("no sandbox", "sandbox
	// not ready", "sandbox-level spec changed", ...).
	SandboxReason string
	SandboxID     string
	// ContainersToStart, in spec order.
	ContainersToStart []containerToStart
	// ContainersToKill maps a running container's ID to why it goes.
	ContainersToKill map[string]containerToKill
	// ContainersToRemove are dead containers no status needs any more.
	ContainersToRemove []string
	// ContainersToReplace never ran (or are in an unknown state) and must
	// be gone before their replacements are created.
	ContainersToReplace []string
	// SandboxesToRemove are dead sandboxes other than the newest.
	SandboxesToRemove []string
	// ContainersToResize are running containers whose resources change
	// in place; PodResize says the pod is being resized, in place or by
	// restarts its containers' resizePolicy asks for (ContainersToKill
	// and ContainersToStart then hold those), so its cgroup is resized
	// with them.
	ContainersToResize []containerToResize
	PodResize          bool
	// Waiting are containers held back, and why.
	Waiting map[string]kubecontainer.Waiting
	// RequeueAfter is when a held-back container may start.
	RequeueAfter time.Duration
}

type containerToStart struct {
	Container    *v1.Container
	RestartCount int
	// TargetID is, for an ephemeral container with a targetContainerName,
	// the runtime ID of the container whose PID namespace it joins.
	TargetID string
}

type containerToKill struct {
	Name   string
	Reason string
	// Grace, if set, replaces the pod's grace period (a probe's
	// terminationGracePeriodSeconds).
	Grace *int64
}

// probeResults is what the pod sync needs of the prober.
type probeResults interface {
	// Unhealthy reports whether the container running as containerID
	// failed its liveness or startup probe, and which ("Liveness",
	// "Startup").
	Unhealthy(containerID string) (probe string, failed bool)
	// Started reports whether container c, running as containerID, passed
	// its startup probe; true when it has none.
	Started(c *v1.Container, containerID string) bool
}

// noProbes is the prober of an agent that runs none.
type noProbes struct{}

func (noProbes) Unhealthy(string) (string, bool)    { return "", false }
func (noProbes) Started(*v1.Container, string) bool { return true }

// probeGrace is the terminationGracePeriodSeconds of the probe that failed,
// if it sets one.
func probeGrace(c *v1.Container, probe string) *int64 {
	var p *v1.Probe
	switch probe {
	case "Liveness":
		p = c.LivenessProbe
	case "Startup":
		p = c.StartupProbe
	}
	if p == nil {
		return nil
	}
	return p.TerminationGracePeriodSeconds
}

func (a *podActions) changesRuntime() bool {
	return a.KillPod || a.CreateSandbox || len(a.ContainersToStart) > 0 || len(a.ContainersToKill) > 0 || len(a.ContainersToReplace) > 0 ||
		len(a.ContainersToRemove) > 0 || len(a.SandboxesToRemove) > 0 || len(a.ContainersToResize) > 0
}

// actuatedResources returns the resources applied to a container of the
// pod (resourceState.Actuated), and whether any were recorded.
type actuatedResources func(name string) (v1.ResourceRequirements, bool)

// computePodActions decides what to do for pod given its runtime status.
// remaining reports the restart backoff left for a container that exited.
func computePodActions(pod *v1.Pod, status *kubecontainer.PodStatus, remaining func(c *v1.Container, cs *kubecontainer.ContainerStatus) time.Duration, probes probeResults) podActions {
	return computePodResize(pod, status, remaining, probes, nil)
}

// computePodResize is computePodActions for pod as allocated, whose running
// containers' applied resources actuated returns (nil: none are known):
// a running container whose allocated resources differ from those is
// resized, in place or by a restart its resizePolicy asks for.
func computePodResize(pod *v1.Pod, status *kubecontainer.PodStatus, remaining func(c *v1.Container, cs *kubecontainer.ContainerStatus) time.Duration, probes probeResults, actuated actuatedResources) podActions {
	if actuated == nil {
		actuated = func(string) (v1.ResourceRequirements, bool) { return v1.ResourceRequirements{}, false }
	}
	if probes == nil {
		probes = noProbes{}
	}
	a := podActions{
		ContainersToKill: map[string]containerToKill{},
		Waiting:          map[string]kubecontainer.Waiting{},
	}
	a.SandboxesToRemove = staleSandboxes(status)
	a.ContainersToRemove = deadContainersToRemove(pod, status)
	if podTerminal(pod) {
		// Finished for good: stop what may still run, keep the last dead
		// containers (and so their logs) until the pod is removed.
		a.KillPod = hasRunning(status)
		return a
	}

	sb := newestSandbox(status)
	if reason := sandboxNeedsReplacing(pod, sb); reason != "" {
		a.KillPod = hasRunning(status)
		if sb != nil {
			a.Attempt = sb.GetMetadata().GetAttempt() + 1
			if pod.Spec.RestartPolicy == v1.RestartPolicyNever && len(status.Containers) > 0 {
				// As the kubelet: a Never pod whose containers ran is
				// not brought back in a new sandbox.
				return a
			}
		}
		a.CreateSandbox = true
		a.SandboxReason = reason
		if len(pod.Spec.InitContainers) > 0 {
			// A new sandbox runs every init container again, from the first.
			c := &pod.Spec.InitContainers[0]
			a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: nextRestartCount(status.FindContainer(c.Name))})
			for i := range pod.Spec.Containers {
				a.Waiting[pod.Spec.Containers[i].Name] = kubecontainer.Waiting{Reason: "PodInitializing"}
			}
			return a
		}
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			cs := status.FindContainer(c.Name)
			if cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_EXITED && !shouldRestart(pod, cs) {
				continue // finished for good (OnFailure and it succeeded)
			}
			a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: nextRestartCount(cs)})
			a.Waiting[c.Name] = kubecontainer.Waiting{Reason: "ContainerCreating"}
		}
		if len(a.ContainersToStart) == 0 {
			// Every container finished for good: no sandbox to hold an IP
			// for nothing.
			a.CreateSandbox = false
		}
		return a
	}
	a.SandboxID = sb.Id

	p := &planner{pod: pod, status: status, remaining: remaining, probes: probes, actuated: actuated, a: &a}
	if done := p.initContainers(sb.Id); !done {
		if len(a.ContainersToStart) == 0 && a.RequeueAfter == 0 && !hasRunningContainer(status) {
			a.KillPod = true // an init container failed for good
		} else {
			p.ephemeralContainers()
		}
		return a
	}

	inSpec := map[string]bool{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		inSpec[c.Name] = true
		p.container(c, status.FindContainer(c.Name), false)
	}
	// Nothing of the regular containers runs or will start again
	// (restartPolicy Never, or OnFailure with every container succeeded):
	// the pod is finished, and like the kubelet the agent stops its
	// sandbox, sidecars included.
	finished := len(a.ContainersToStart) == 0 && a.RequeueAfter == 0 && !regularRunning(pod, status)
	// Sidecars (init containers that always restart) run beside the
	// regular containers until the pod is finished.
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; kubecontainer.IsSidecar(c) {
			inSpec[c.Name] = true
			if !finished {
				p.container(c, status.FindContainer(c.Name), true)
			}
		}
	}
	ephemeralNames(pod, inSpec)
	for _, cs := range status.Containers {
		if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING && !inSpec[cs.Name] {
			a.ContainersToKill[cs.ID] = containerToKill{Name: cs.Name, Reason: "not in spec"}
		}
	}
	a.KillPod = finished
	if !finished {
		p.ephemeralContainers()
	}
	return a
}

// podTerminal reports whether the pod's own status says it has finished
// (phase Succeeded or Failed): for a pod from an apiserver, what the API
// holds. As with the kubelet, such a pod never runs again, whatever the
// runtime holds of it (after a reboot, nothing).
func podTerminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// regularRunning reports whether a regular container of pod runs.
func regularRunning(pod *v1.Pod, status *kubecontainer.PodStatus) bool {
	for i := range pod.Spec.Containers {
		if cs := status.FindContainer(pod.Spec.Containers[i].Name); cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return true
		}
	}
	return false
}

func hasRunningContainer(status *kubecontainer.PodStatus) bool {
	for _, cs := range status.Containers {
		if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return true
		}
	}
	return false
}

// planner decides the container actions of one sync in a ready sandbox:
// of pod, given its runtime status, the restart back-off left for an
// exited container (remaining) and the probes' verdicts. It adds what it
// decides to a.
type planner struct {
	pod       *v1.Pod
	status    *kubecontainer.PodStatus
	remaining func(c *v1.Container, cs *kubecontainer.ContainerStatus) time.Duration
	probes    probeResults
	actuated  actuatedResources
	a         *podActions
}

// container decides what to do with one container of a ready sandbox
// given its newest status cs (nil if it never ran): start it, kill and
// restart it on a spec change, replace one that never started, or restart
// one that exited per the restart policy (always, for a sidecar), after
// its back-off.
func (p *planner) container(c *v1.Container, cs *kubecontainer.ContainerStatus, alwaysRestart bool) {
	pod, a := p.pod, p.a
	switch {
	case cs == nil:
		a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c})
		a.Waiting[c.Name] = kubecontainer.Waiting{Reason: "ContainerCreating"}
	case cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		actuated, known := p.actuated(c.Name)
		var created *v1.ResourceRequirements
		if known {
			created = &actuated
		}
		if !kubecontainer.MatchesSpec(cs.Hash, c, created) {
			a.ContainersToKill[cs.ID] = containerToKill{Name: c.Name, Reason: "spec changed"}
			a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: cs.RestartCount + 1})
			return
		}
		if probe, failed := p.probes.Unhealthy(cs.ID); failed {
			// As the kubelet: killed and, unless the policy is Never,
			// started again in the same sync whatever its exit code (an
			// app that exits 0 on SIGTERM is restarted under OnFailure).
			a.ContainersToKill[cs.ID] = containerToKill{Name: c.Name, Reason: probe + " probe failed", Grace: probeGrace(c, probe)}
			if alwaysRestart || pod.Spec.RestartPolicy != v1.RestartPolicyNever {
				a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: cs.RestartCount + 1})
			}
			return
		}
		if !known {
			return
		}
		switch resize, restart := resizeAction(c, actuated); {
		case restart:
			// As the kubelet: its resizePolicy asks for a restart, which
			// no restart policy holds back.
			a.ContainersToKill[cs.ID] = containerToKill{Name: c.Name, Reason: "resize requires restart"}
			a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: cs.RestartCount + 1})
			a.PodResize = true
		case resize:
			a.ContainersToResize = append(a.ContainersToResize, containerToResize{ID: cs.ID, Container: c, From: actuated})
			a.PodResize = true
		}
	case cs.State != runtimeapi.ContainerState_CONTAINER_EXITED:
		// Created but never started (the agent died between create
		// and start, or the start failed), or in an unknown state:
		// it goes before its replacement is created, so that never
		// two containers of one name are alive. An unknown one may
		// run: stop it first.
		if cs.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			a.ContainersToKill[cs.ID] = containerToKill{Name: c.Name, Reason: "unknown state"}
		}
		a.ContainersToReplace = append(a.ContainersToReplace, cs.ID)
		a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: cs.RestartCount + 1})
	case alwaysRestart || shouldRestart(pod, cs):
		if wait := p.remaining(c, cs); wait > 0 {
			a.Waiting[c.Name] = kubecontainer.Waiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", wait.Round(time.Second), c.Name, pod.Name, pod.Namespace, pod.UID),
			}
			if a.RequeueAfter == 0 || wait < a.RequeueAfter {
				a.RequeueAfter = wait
			}
			return
		}
		a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: cs.RestartCount + 1})
	}
}

// initContainers starts the pod's init containers one after another, each
// to success, in the sandbox sandboxID; a failed one is restarted per the
// pod's restart policy (never under Never: the pod has failed). It reports
// whether every init container has succeeded, so that the regular
// containers may run.
func (p *planner) initContainers(sandboxID string) bool {
	pod, status, a := p.pod, p.status, p.a
	if regularStarted(pod, status, sandboxID) {
		return true // initialization is over in this sandbox
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := findInSandbox(status, c.Name, sandboxID)
		if kubecontainer.IsSidecar(c) {
			// A sidecar lets the next init container start once it runs.
			switch {
			case cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING && p.probes.Started(c, cs.ID):
				continue
			case cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
				// Running, not yet started (its startup probe): the next
				// init container waits; a failed probe kills it.
				p.container(c, cs, true)
			case cs == nil:
				a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: nextRestartCount(status.FindContainer(c.Name))})
			default:
				p.container(c, cs, true)
			}
			setInitializing(pod, a)
			return false
		}
		switch {
		case cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_EXITED && cs.ExitCode == 0:
			continue // succeeded
		case cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
			// running: wait for it
		case cs == nil:
			a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: nextRestartCount(status.FindContainer(c.Name))})
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever && cs.State == runtimeapi.ContainerState_CONTAINER_EXITED:
			// failed for good: the pod has failed
		default:
			if wait := p.remaining(c, cs); wait > 0 {
				a.Waiting[c.Name] = kubecontainer.Waiting{
					Reason:  "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", wait.Round(time.Second), c.Name, pod.Name, pod.Namespace, pod.UID),
				}
				a.RequeueAfter = wait
			} else {
				a.ContainersToStart = append(a.ContainersToStart, containerToStart{Container: c, RestartCount: cs.RestartCount + 1})
			}
		}
		setInitializing(pod, a)
		return false
	}
	return true
}

// setInitializing marks the regular containers as waiting for the init
// containers.
func setInitializing(pod *v1.Pod, a *podActions) {
	for j := range pod.Spec.Containers {
		a.Waiting[pod.Spec.Containers[j].Name] = kubecontainer.Waiting{Reason: "PodInitializing"}
	}
}

// regularStarted reports whether a regular container was ever created in
// the sandbox: then the pod's initialization there is over.
func regularStarted(pod *v1.Pod, status *kubecontainer.PodStatus, sandboxID string) bool {
	for i := range pod.Spec.Containers {
		if findInSandbox(status, pod.Spec.Containers[i].Name, sandboxID) != nil {
			return true
		}
	}
	return false
}

// findInSandbox returns the newest status of the container called name
// that ran in the given sandbox.
func findInSandbox(status *kubecontainer.PodStatus, name, sandboxID string) *kubecontainer.ContainerStatus {
	for _, cs := range status.Containers {
		if cs.Name == name && cs.SandboxID == sandboxID {
			return cs
		}
	}
	return nil
}

// sandboxNeedsReplacing says why the pod needs a new sandbox, or "".
func sandboxNeedsReplacing(pod *v1.Pod, sb *runtimeapi.PodSandboxStatus) string {
	switch {
	case sb == nil:
		return "no sandbox"
	case sb.State != runtimeapi.PodSandboxState_SANDBOX_READY:
		return "sandbox not ready"
	case sb.Annotations[kubecontainer.AnnotationSandboxHash] != kubecontainer.HashSandbox(pod):
		return "sandbox-level spec changed"
	case qosChanged(pod, sb):
		// Only a static pod's edit can change it (the apiserver refuses
		// such a resize): the pod's cgroup, the sandbox's parent, lives
		// under its class's.
		return "QoS class changed"
	case !pod.Spec.HostNetwork && len(kubecontainer.SandboxIPs(sb)) == 0:
		return "sandbox has no IP"
	}
	return ""
}

// qosChanged reports whether pod's QoS class differs from the one its
// sandbox sb was made with (sandboxes made before the class was recorded
// are taken to have the pod's).
func qosChanged(pod *v1.Pod, sb *runtimeapi.PodSandboxStatus) bool {
	made := sb.Annotations[kubecontainer.AnnotationSandboxQOS]
	return made != "" && made != string(qos.Class(pod))
}

// shouldRestart applies the pod's restart policy to a container that is not
// running.
func shouldRestart(pod *v1.Pod, cs *kubecontainer.ContainerStatus) bool {
	if cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		return true // created but never started, or unknown: try again
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return cs.ExitCode != 0
	default:
		return true
	}
}

func nextRestartCount(cs *kubecontainer.ContainerStatus) int {
	if cs == nil {
		return 0
	}
	return cs.RestartCount + 1
}

func newestSandbox(status *kubecontainer.PodStatus) *runtimeapi.PodSandboxStatus {
	if status == nil || len(status.Sandboxes) == 0 {
		return nil
	}
	return status.Sandboxes[0]
}

// hasRunning reports whether any container runs or any sandbox is ready.
func hasRunning(status *kubecontainer.PodStatus) bool {
	if hasRunningContainer(status) {
		return true
	}
	for _, sb := range status.Sandboxes {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			return true
		}
	}
	return false
}

// staleSandboxes are the sandboxes other than the newest one; a pod has one
// sandbox, and older ones, ready or not, go.
func staleSandboxes(status *kubecontainer.PodStatus) []string {
	var out []string
	for i, sb := range status.Sandboxes {
		if i > 0 {
			out = append(out, sb.Id)
		}
	}
	return out
}

// deadContainersToRemove is the container GC of a pod, the kubelet's with
// one dead container per name (MaxPerPodContainer 1): per container name
// the newest dead container stays (it is the lastState of a running one,
// or the state of one waiting to restart), older dead ones go, and so do
// dead containers whose name left the spec.
func deadContainersToRemove(pod *v1.Pod, status *kubecontainer.PodStatus) []string {
	inSpec := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		inSpec[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		inSpec[c.Name] = true
	}
	ephemeralNames(pod, inSpec)
	dead := map[string]int{}
	var out []string
	for _, cs := range status.Containers { // newest first
		if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		dead[cs.Name]++
		if !inSpec[cs.Name] || dead[cs.Name] > 1 {
			out = append(out, cs.ID)
		}
	}
	return out
}
