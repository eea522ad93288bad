package podworkers

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// resourceState keeps the resources granted to (allocated) and applied to
// (actuated) each pod's containers, and the pods' resize conditions
// (agent/allocation.Manager). Safe for concurrent use; its setters persist
// the state before they return, and keep it in memory when they fail.
type resourceState interface {
	// Allocated returns the resources granted to pod uid's resizable
	// containers, by name, and whether the pod has an allocation.
	Allocated(uid types.UID) (map[string]v1.ResourceRequirements, bool)
	// Grant records a grant and the pod's cpu and memory requests as
	// granted at once; commit returns once it is written down (and, for
	// a grant that changed the state, every grant before it).
	Grant(uid types.UID, containers map[string]v1.ResourceRequirements, requests v1.ResourceList) (commit func() error)
	// Requested sums the requests granted to the node's other pods.
	Requested(except types.UID) v1.ResourceList
	// Actuated returns the resources last applied to a container.
	Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool)
	// SetActuated records the resources applied to a container.
	SetActuated(uid types.UID, name string, r v1.ResourceRequirements) error
	// Release forgets a pod that has terminated or finished.
	Release(uid types.UID) error
	// The resize conditions, as the kubelet's status manager keeps them.
	SetResizePending(uid types.UID, reason, message string, generation int64) bool
	ClearResizePending(uid types.UID)
	SetResizeInProgress(uid types.UID, reason, message string, generation int64) (int64, bool)
	ClearResizeInProgress(uid types.UID) (int64, bool)
}

// containerToResize is a running container whose cpu and memory change in
// place: Container is its allocated spec, From what was applied to it.
type containerToResize struct {
	ID        string
	Container *v1.Container
	From      v1.ResourceRequirements
}

// resizeValues are the figures a resize compares, as the kubelet compares
// them: cpu in millicores, memory in bytes; 0 where none is set.
type resizeValues struct {
	cpuRequest, cpuLimit, memoryRequest, memoryLimit int64
}

func valuesOf(r v1.ResourceRequirements) resizeValues {
	return resizeValues{
		cpuRequest:    r.Requests.Cpu().MilliValue(),
		cpuLimit:      r.Limits.Cpu().MilliValue(),
		memoryRequest: r.Requests.Memory().Value(),
		memoryLimit:   r.Limits.Memory().Value(),
	}
}

// resizeAction says what a running container c (its allocated spec),
// whose applied resources are actuated, needs: nothing, an in-place
// update, or a restart, which its resizePolicy asks for when a resource
// it names RestartContainer changes (NotRequired when it names none).
func resizeAction(c *v1.Container, actuated v1.ResourceRequirements) (resize, restart bool) {
	want, have := valuesOf(c.Resources), valuesOf(actuated)
	if want == have {
		return false, false
	}
	changed := map[v1.ResourceName]bool{
		v1.ResourceCPU:    want.cpuRequest != have.cpuRequest || want.cpuLimit != have.cpuLimit,
		v1.ResourceMemory: want.memoryRequest != have.memoryRequest || want.memoryLimit != have.memoryLimit,
	}
	for _, p := range c.ResizePolicy {
		if changed[p.ResourceName] && p.RestartPolicy == v1.RestartContainer {
			return true, true
		}
	}
	return true, false
}

// resizableContainers are the containers whose resources a resize may
// change, as the kubelet's: the regular containers and the sidecars.
// Other init containers always run with their spec's resources.
func resizableContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; kubecontainer.IsSidecar(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// withAllocation returns pod with its resizable containers' resources
// replaced by alloc's (a copy, when any differs).
func withAllocation(pod *v1.Pod, alloc map[string]v1.ResourceRequirements) *v1.Pod {
	out := pod
	for i, c := range resizableContainers(pod) {
		r, ok := alloc[c.Name]
		if !ok || apiequality.Semantic.DeepEqual(c.Resources, r) {
			continue
		}
		if out == pod {
			out = pod.DeepCopy()
		}
		resizableContainers(out)[i].Resources = *r.DeepCopy()
	}
	return out
}

// allocationOf is what pod's resizable containers are granted when pod is
// granted as it is.
func allocationOf(pod *v1.Pod) map[string]v1.ResourceRequirements {
	out := map[string]v1.ResourceRequirements{}
	for _, c := range resizableContainers(pod) {
		out[c.Name] = *c.Resources.DeepCopy()
	}
	return out
}

// podRequests are a pod's cpu and memory requests as the fit of a resize
// counts them.
func podRequests(pod *v1.Pod) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(cgroups.PodCPURequest(pod), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(cgroups.PodMemoryRequest(pod), resource.BinarySI),
	}
}

// allocate returns pod as the node runs it: with the resources granted to
// its containers. A pod seen for the first time is granted its spec's. A
// spec whose resources differ from the grant asks for a resize, which is
// granted (PodResizeInProgress, event ResizeStarted) when the node's
// allocatable cpu and memory, less what the other pods are granted, hold
// the pod's new requests; else it waits (PodResizePending: Infeasible when
// the pod alone would not fit the node, Deferred otherwise, with the
// kubelet's messages) and the pod keeps its grant. A container added to or
// removed from the spec (a static pod's edit) joins or leaves the grant as
// it is. Decisions of all pods are made one at a time.
//
// The grant is written down after the decision, outside the lock that
// orders the decisions: a batch of new pods decides in turn and writes
// together (allocation.Manager.Grant).
func (s *Syncer) allocate(ctx context.Context, pod *v1.Pod) *v1.Pod {
	allocated, commit := s.decideAllocation(ctx, pod)
	if commit != nil {
		if err := commit(); err != nil {
			klog.FromContext(ctx).Error(err, "Recording the pod's allocated resources failed; kept in memory")
		}
	}
	return allocated
}

// decideAllocation is allocate's decision, made under resizeMu; commit,
// if not nil, writes down the grant it recorded.
func (s *Syncer) decideAllocation(ctx context.Context, pod *v1.Pod) (_ *v1.Pod, commit func() error) {
	logger := klog.FromContext(ctx)
	st := s.cfg.Resources
	s.resizeMu.Lock()
	defer s.resizeMu.Unlock()
	alloc, ok := st.Allocated(pod.UID)
	if !ok {
		return pod, st.Grant(pod.UID, allocationOf(pod), podRequests(pod))
	}
	// Containers added to the spec are granted theirs; removed ones go.
	merged := map[string]v1.ResourceRequirements{}
	for _, c := range resizableContainers(pod) {
		if r, ok := alloc[c.Name]; ok {
			merged[c.Name] = r
		} else {
			merged[c.Name] = c.Resources
		}
	}
	allocated := withAllocation(pod, merged)
	// Of two grants below, the second's commit covers the first's: the
	// second changes the state (allocated != pod: some container's
	// resources differ from merged).
	if len(merged) != len(alloc) || !apiequality.Semantic.DeepEqual(merged, alloc) {
		commit = st.Grant(pod.UID, merged, podRequests(allocated))
	}
	if allocated == pod {
		st.ClearResizePending(pod.UID)
		return pod, commit
	}
	if reason, message := s.resizeFits(pod, allocated); reason != "" {
		if st.SetResizePending(pod.UID, reason, message, pod.Generation) {
			logger.Info("Pod resize pending", "reason", reason, "message", message, "generation", pod.Generation)
			reasonEvent := events.ResizeDeferred
			if reason == v1.PodReasonInfeasible {
				reasonEvent = events.ResizeInfeasible
			}
			s.podEvent(pod, v1.EventTypeWarning, reasonEvent, "%s", resizeMessage(pod, "Pod resize "+reason, message))
		}
		return allocated, commit
	}
	commit = st.Grant(pod.UID, allocationOf(pod), podRequests(pod))
	st.ClearResizePending(pod.UID)
	st.ClearResizeInProgress(pod.UID)
	st.SetResizeInProgress(pod.UID, "", "", pod.Generation)
	logger.Info("Pod resize started", "generation", pod.Generation)
	s.podEvent(pod, v1.EventTypeNormal, events.ResizeStarted, "%s", resizeMessage(pod, "Pod resize started", ""))
	return pod, commit
}

// resizeFits checks a resize from allocated to desired against the node's
// allocatable cpu and memory: a reason and the kubelet's message when it
// does not fit. Only a resource whose request grows is checked: a resize
// that does not ask for more of it is never held back by it (on a node
// overcommitted by static pods the kubelet defers even those).
func (s *Syncer) resizeFits(desired, allocated *v1.Pod) (reason, message string) {
	type check struct {
		name      v1.ResourceName
		want, had int64
		capacity  int64
		known     bool
		used      int64
	}
	alloc := s.cfg.NodeAllocatable
	capCPU, okCPU := alloc[v1.ResourceCPU]
	capMem, okMem := alloc[v1.ResourceMemory]
	cpu := check{name: v1.ResourceCPU, want: cgroups.PodCPURequest(desired), had: cgroups.PodCPURequest(allocated), capacity: capCPU.MilliValue(), known: okCPU}
	mem := check{name: v1.ResourceMemory, want: cgroups.PodMemoryRequest(desired), had: cgroups.PodMemoryRequest(allocated), capacity: capMem.Value(), known: okMem}
	// As the kubelet before the apiserver refused such resizes (1.36):
	// a pod that alone exceeds the node never fits.
	for _, c := range []check{mem, cpu} {
		if c.known && c.want > c.had && c.want > c.capacity {
			return v1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", c.name, c.want, c.capacity)
		}
	}
	others := s.cfg.Resources.Requested(desired.UID)
	cpu.used, mem.used = others.Cpu().MilliValue(), others.Memory().Value()
	for _, c := range []check{cpu, mem} {
		if c.known && c.want > c.had && c.want > c.capacity-c.used {
			return v1.PodReasonDeferred, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", c.name, c.want, c.used, c.capacity)
		}
	}
	return "", ""
}

// adoptActuated records, for each running resizable container of pod that
// has no applied resources recorded, its allocated ones: the containers an
// agent before in-place resize (or one whose state file was lost) started,
// which were made with their spec's resources.
func (s *Syncer) adoptActuated(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) {
	for _, c := range resizableContainers(pod) {
		cs := status.FindContainer(c.Name)
		if cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if _, ok := s.cfg.Resources.Actuated(pod.UID, c.Name); ok {
			continue
		}
		if err := s.cfg.Resources.SetActuated(pod.UID, c.Name, c.Resources); err != nil {
			klog.FromContext(ctx).Error(err, "Recording a container's applied resources failed; kept in memory", "container", c.Name)
		}
	}
}

// resizeInPlace applies the resize of pod (its allocated spec): after a
// check that no memory limit goes below what is in use, it grows the
// pod's cgroup to hold both the old and the new limits, updates each
// container to resize through CRI UpdateContainerResources (recording what
// it applied), then sets the pod's cgroup to its new limits, before any
// container is (re)started. A failure stops there, is reported in the
// PodResizeInProgress condition (reason Error) and a ResizeError event,
// and is retried at the next sync.
func (s *Syncer) resizeInPlace(ctx context.Context, pod *v1.Pod, resizes []containerToResize) error {
	logger := klog.FromContext(ctx)
	if err := s.checkMemoryShrink(pod, resizes); err != nil {
		return s.resizeFailed(ctx, pod, err)
	}
	var target cgroups.ResourceConfig
	if s.cfg.Cgroups != nil {
		target = cgroups.PodResources(pod)
		grown := target
		if cur, ok := s.cfg.Cgroups.PodApplied(pod.UID); ok {
			grown = cgroups.Grown(cur, target)
		}
		if err := s.cfg.Cgroups.SetPod(ctx, pod, grown); err != nil {
			return s.resizeFailed(ctx, pod, fmt.Errorf("pod cgroup: %w", err))
		}
	}
	for _, r := range resizes {
		res := linuxResources(r.Container, s.oomScoreAdj(pod, r.Container))
		if err := s.cfg.Runtime.UpdateContainerResources(ctx, r.ID, &runtimeapi.ContainerResources{Linux: res}); err != nil {
			return s.resizeFailed(ctx, pod, fmt.Errorf("update resources of container %q: %w", r.Container.Name, err))
		}
		if err := s.cfg.Resources.SetActuated(pod.UID, r.Container.Name, r.Container.Resources); err != nil {
			logger.Error(err, "Recording a container's applied resources failed; kept in memory", "container", r.Container.Name)
		}
		logger.Info("Resized container in place", "container", r.Container.Name, "containerID", r.ID,
			"cpuShares", res.CpuShares, "cpuQuota", res.CpuQuota, "memoryLimit", res.MemoryLimitInBytes)
	}
	if s.cfg.Cgroups != nil {
		if err := s.cfg.Cgroups.SetPod(ctx, pod, target); err != nil {
			return s.resizeFailed(ctx, pod, fmt.Errorf("pod cgroup: %w", err))
		}
	}
	return nil
}

// checkMemoryShrink refuses, as the kubelet does, a resize that would set
// the pod's or a container's memory limit (lowered, or set where there was
// none) at or below what its cgroup uses now. Without a cgroup manager
// there is nothing to read usage from, and nothing is checked.
func (s *Syncer) checkMemoryShrink(pod *v1.Pod, resizes []containerToResize) error {
	cg := s.cfg.Cgroups
	if cg == nil {
		return nil
	}
	var errs []error
	target := cgroups.PodResources(pod).Memory
	cur, known := cg.PodApplied(pod.UID)
	if target > 0 && (!known || cur.Memory == 0 || target < cur.Memory) {
		if path, ok := cg.FindPodCgroup(pod.UID); ok {
			st, err := cg.Stats(path)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("missing pod memory usage: %w", err))
			case st.Memory.Usage >= uint64(target):
				errs = append(errs, fmt.Errorf("attempting to set pod memory limit (%d) below current usage (%d)", target, st.Memory.Usage))
			}
		}
	}
	parent := cg.PodCgroupParent(pod)
	for _, r := range resizes {
		want, had := r.Container.Resources.Limits.Memory().Value(), r.From.Limits.Memory().Value()
		if want == 0 || (had != 0 && want >= had) {
			continue
		}
		st, err := cg.Stats(cg.ContainerCgroup(parent, r.ID))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("missing container %q memory usage: %w", r.Container.Name, err))
		case st.Memory.Usage >= uint64(want):
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", r.Container.Name, want, st.Memory.Usage))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot decrease memory limits: %w", utilerrors.NewAggregate(errs))
	}
	return nil
}

// resizeFailed reports a resize that failed in the PodResizeInProgress
// condition, reason Error, and a ResizeError event when that is new; it
// returns err.
func (s *Syncer) resizeFailed(ctx context.Context, pod *v1.Pod, err error) error {
	klog.FromContext(ctx).Info("Pod resize failed; the next sync tries again", "err", err)
	if gen, changed := s.cfg.Resources.SetResizeInProgress(pod.UID, v1.PodReasonError, err.Error(), pod.Generation); changed {
		s.podEvent(pod, v1.EventTypeWarning, events.ResizeError, "%s", resizeMessageAt(pod, gen, "Pod resize error", err.Error()))
	}
	return fmt.Errorf("resize: %w", err)
}

// updateResizeStatus sets pod's PodResizeInProgress condition while a
// running resizable container's applied resources differ from those
// allocated to it (status is what runs), and clears it once none does,
// with a ResizeCompleted event.
func (s *Syncer) updateResizeStatus(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) {
	inProgress := false
	for _, c := range resizableContainers(pod) {
		cs := status.FindContainer(c.Name)
		if cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if act, ok := s.cfg.Resources.Actuated(pod.UID, c.Name); ok && valuesOf(act) != valuesOf(c.Resources) {
			inProgress = true
			break
		}
	}
	if inProgress {
		s.cfg.Resources.SetResizeInProgress(pod.UID, "", "", pod.Generation)
		return
	}
	if gen, cleared := s.cfg.Resources.ClearResizeInProgress(pod.UID); cleared {
		klog.FromContext(ctx).Info("Pod resize completed", "generation", gen)
		s.podEvent(pod, v1.EventTypeNormal, events.ResizeCompleted, "%s", resizeMessageAt(pod, gen, "Pod resize completed", ""))
	}
}

// resizeMessage is the kubelet's resize event message: prefix, then the
// pod's containers' resources and generation (and the error) in JSON.
func resizeMessage(pod *v1.Pod, prefix, errMsg string) string {
	return resizeMessageAt(pod, pod.Generation, prefix, errMsg)
}

func resizeMessageAt(pod *v1.Pod, generation int64, prefix, errMsg string) string {
	type containerResources struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []containerResources `json:"initContainers,omitempty"`
		Containers     []containerResources `json:"containers,omitempty"`
		Generation     int64                `json:"generation"`
		Error          string               `json:"error,omitempty"`
	}{Generation: generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, containerResources{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, containerResources{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}
