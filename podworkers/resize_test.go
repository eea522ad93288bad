package podworkers

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/allocation"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// resizeCall is one UpdateContainerResources.
type resizeCall struct {
	id  string
	res *runtimeapi.LinuxContainerResources
}

// UpdateContainerResources records the call and, as a runtime does,
// shows the new resources in the container's status.
func (s *spyRuntime) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	if err := s.FakeRuntimeService.UpdateContainerResources(ctx, id, res); err != nil {
		return err
	}
	s.mu.Lock()
	s.resized = append(s.resized, resizeCall{id, res.GetLinux()})
	s.mu.Unlock()
	s.Lock()
	defer s.Unlock()
	if c, ok := s.Containers[id]; ok {
		c.Resources = &runtimeapi.ContainerResources{Linux: res.GetLinux()}
	}
	return nil
}

func (s *spyRuntime) takeResized() []resizeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.resized
	s.resized = nil
	return out
}

func rl(cpu, mem string) v1.ResourceList {
	out := v1.ResourceList{}
	if cpu != "" {
		out[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

// guaranteed gives a pod's container c requests and limits of cpu and mem.
func guaranteed(p *v1.Pod, c, cpu, mem string) {
	specOf(p, c).Resources = v1.ResourceRequirements{Requests: rl(cpu, mem), Limits: rl(cpu, mem)}
}

// resized is pod at the next generation with container c at cpu and mem.
func resized(pod *v1.Pod, c, cpu, mem string) *v1.Pod {
	p := pod.DeepCopy()
	p.Generation++
	guaranteed(p, c, cpu, mem)
	return p
}

// resizeFixture is a syncer with cgroups, a node of 2 cpus and 2Gi, and
// the running pod "rs" of containers app and side, Guaranteed.
func resizeFixture(t *testing.T) (*syncerFixture, *fakeCgroups, *v1.Pod) {
	t.Helper()
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side"})
	cg := withCgroups(f, 2<<30)
	f.s.cfg.NodeAllocatable = rl("2", "2Gi")
	pod := newPod("rs", []string{"app", "side"})
	pod.Generation = 1
	guaranteed(pod, "app", "200m", "64Mi")
	guaranteed(pod, "side", "100m", "32Mi")
	f.mustSync(t, pod)
	f.events.take()
	// Each uses 1Mi.
	parent := cg.PodCgroupParent(pod)
	cg.mu.Lock()
	cg.usage = map[string]uint64{parent: 3 << 20}
	for _, c := range []string{"app", "side"} {
		cg.usage[parent+"/"+containerID(pod, 0, c, 0)] = 1 << 20
	}
	cg.mu.Unlock()
	return f, cg, pod
}

func (f *syncerFixture) resources() *allocation.Manager {
	return f.s.cfg.Resources.(*allocation.Manager)
}

func hasEvent(events []string, reason string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, " "+reason+" ") })
}

// A resize of a container whose resizePolicy needs no restart is made in
// place: the runtime gets the new cpu and memory (UpdateContainerResources,
// the kubelet's cgroup values), the container keeps running as it was,
// the pod's cgroup grows before it and takes its new size after, and the
// pod is reported with its new resources and no resize condition left.
func TestResizeInPlace(t *testing.T) {
	f, cg, pod := resizeFixture(t)
	app := containerID(pod, 0, "app", 0)
	cg.mu.Lock()
	cg.set = nil
	cg.mu.Unlock()

	bigger := resized(pod, "app", "500m", "128Mi")
	f.resetCalls()
	f.mustSync(t, bigger)

	if got := f.changes(); len(got) != 0 {
		t.Errorf("runtime changes = %v, want none (an update in place)", got)
	}
	calls := f.rt.takeResized()
	if len(calls) != 1 || calls[0].id != app {
		t.Fatalf("UpdateContainerResources calls = %+v, want one for app %s", calls, app)
	}
	if r := calls[0].res; r.CpuShares != 512 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 128<<20 {
		t.Errorf("app updated to %+v, want shares 512, quota 50000/100000, memory 128Mi", r)
	}
	cg.mu.Lock()
	set := slices.Clone(cg.set)
	cg.mu.Unlock()
	want := []cgroups.ResourceConfig{
		// grown to hold old and new: both are the new, larger values
		{CPUShares: 614, CPUQuota: 60000, CPUPeriod: 100000, Memory: 160 << 20},
		{CPUShares: 614, CPUQuota: 60000, CPUPeriod: 100000, Memory: 160 << 20},
	}
	if !slices.Equal(set, want) {
		t.Errorf("pod cgroup set to %+v, want %+v", set, want)
	}
	last := f.status.last(t)
	if got := specOf(last.pod, "app").Resources; !apiequality.Semantic.DeepEqual(got, specOf(bigger, "app").Resources) {
		t.Errorf("reported app resources %v, want the new ones", got)
	}
	if cs := last.status.FindContainer("app"); cs == nil || cs.ID != app || cs.Resources.GetMemoryLimitInBytes() != 128<<20 {
		t.Errorf("reported app = %+v, want the same container with the runtime's new memory limit", cs)
	}
	if got, _ := f.resources().Actuated(pod.UID, "app"); !apiequality.Semantic.DeepEqual(got, specOf(bigger, "app").Resources) {
		t.Errorf("actuated = %v, want the new resources", got)
	}
	if conds := f.resources().ResizeConditions(pod.UID); len(conds) != 0 {
		t.Errorf("resize conditions left: %+v", conds)
	}
	ev := f.events.take()
	if !hasEvent(ev, "ResizeStarted") || !hasEvent(ev, "ResizeCompleted") {
		t.Errorf("events = %v, want ResizeStarted and ResizeCompleted", ev)
	}

	// A sync with nothing new resizes nothing again.
	f.mustSync(t, bigger)
	if calls := f.rt.takeResized(); len(calls) != 0 {
		t.Errorf("a second sync resized again: %+v", calls)
	}

	// Shrinking: the pod's cgroup keeps the larger values until the
	// container has shrunk.
	cg.mu.Lock()
	cg.set = nil
	cg.mu.Unlock()
	f.mustSync(t, resized(bigger, "app", "100m", "48Mi"))
	cg.mu.Lock()
	set = slices.Clone(cg.set)
	cg.mu.Unlock()
	want = []cgroups.ResourceConfig{
		{CPUShares: 614, CPUQuota: 60000, CPUPeriod: 100000, Memory: 160 << 20},
		{CPUShares: 204, CPUQuota: 20000, CPUPeriod: 100000, Memory: 80 << 20},
	}
	if !slices.Equal(set, want) {
		t.Errorf("pod cgroup set to %+v when shrinking, want %+v", set, want)
	}
}

// A container whose resizePolicy says RestartContainer for a resource
// that changes is restarted with its new resources; the other keeps
// running, resized in place.
func TestResizeRestartContainer(t *testing.T) {
	f, _, pod := resizeFixture(t)
	specOf(pod, "app").ResizePolicy = []v1.ContainerResizePolicy{
		{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
		{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
	}
	// The policy alone is no change: nothing restarts.
	f.resetCalls()
	f.mustSync(t, pod)
	if got := f.changes(); len(got) != 0 {
		t.Fatalf("changing the resize policy changed %v", got)
	}

	cpuOnly := resized(pod, "app", "300m", "64Mi")
	f.mustSync(t, cpuOnly)
	if got := f.changes(); len(got) != 0 {
		t.Errorf("a cpu resize (NotRequired) changed %v", got)
	}
	if calls := f.rt.takeResized(); len(calls) != 1 {
		t.Errorf("a cpu resize made %d updates, want 1", len(calls))
	}

	memory := resized(cpuOnly, "app", "300m", "96Mi")
	memory = resized(memory, "side", "150m", "32Mi")
	f.resetCalls()
	f.mustSync(t, memory)
	if got := f.changes(); !slices.Equal(got, []string{"StopContainer", "CreateContainer", "StartContainer"}) {
		t.Errorf("a memory resize (RestartContainer) changed %v, want app restarted", got)
	}
	calls := f.rt.takeResized()
	if len(calls) != 1 || calls[0].id != containerID(pod, 0, "side", 0) {
		t.Errorf("updates = %+v, want side resized in place", calls)
	}
	f.rt.mu.Lock()
	cfg := f.rt.created[len(f.rt.created)-1]
	f.rt.mu.Unlock()
	if cfg.Metadata.Name != "app" || cfg.Metadata.Attempt != 1 || cfg.Linux.Resources.MemoryLimitInBytes != 96<<20 {
		t.Errorf("restarted app = %s attempt %d memory %d, want app attempt 1 with 96Mi", cfg.Metadata.Name, cfg.Metadata.Attempt, cfg.Linux.Resources.MemoryLimitInBytes)
	}
	if conds := f.resources().ResizeConditions(pod.UID); len(conds) != 0 {
		t.Errorf("resize conditions left: %+v", conds)
	}
}

// A resize the node has no room for waits, Deferred, with the kubelet's
// message, and the pod keeps running with its grant; once another pod's
// grant shrinks the resize is made. One larger than the node is
// Infeasible.
func TestResizePending(t *testing.T) {
	f, _, pod := resizeFixture(t)
	// Another pod holds 1500m of the node's 2 cpus.
	other := newPod("other", []string{"app"})
	guaranteed(other, "app", "1500m", "64Mi")
	if err := f.resources().SetAllocated(other.UID, allocationOf(other), podRequests(other)); err != nil {
		t.Fatal(err)
	}

	tooMuch := resized(pod, "app", "800m", "64Mi")
	f.mustSync(t, tooMuch)
	if calls := f.rt.takeResized(); len(calls) != 0 {
		t.Errorf("a deferred resize was made: %+v", calls)
	}
	conds := f.resources().ResizeConditions(pod.UID)
	want := "Node didn't have enough resource: cpu, requested: 900, used: 1500, capacity: 2000"
	if len(conds) != 1 || conds[0].Type != v1.PodResizePending || conds[0].Reason != v1.PodReasonDeferred || conds[0].Message != want || conds[0].ObservedGeneration != 2 {
		t.Errorf("conditions = %+v, want PodResizePending Deferred %q of generation 2", conds, want)
	}
	if got := specOf(f.status.last(t).pod, "app").Resources.Limits.Cpu().String(); got != "200m" {
		t.Errorf("reported app cpu limit %s, want the grant, 200m", got)
	}
	if ev := f.events.take(); !hasEvent(ev, "ResizeDeferred") {
		t.Errorf("events = %v, want ResizeDeferred", ev)
	}

	// The other pod shrinks: the resize fits.
	guaranteed(other, "app", "500m", "64Mi")
	if err := f.resources().SetAllocated(other.UID, allocationOf(other), podRequests(other)); err != nil {
		t.Fatal(err)
	}
	f.mustSync(t, tooMuch)
	if calls := f.rt.takeResized(); len(calls) != 1 {
		t.Errorf("the resize was not made once it fit: %+v", calls)
	}
	if conds := f.resources().ResizeConditions(pod.UID); len(conds) != 0 {
		t.Errorf("conditions = %+v, want none", conds)
	}

	huge := resized(tooMuch, "app", "1", "4Gi")
	f.mustSync(t, huge)
	conds = f.resources().ResizeConditions(pod.UID)
	want = "Node didn't have enough capacity: memory, requested: 4328521728, capacity: 2147483648"
	if len(conds) != 1 || conds[0].Reason != v1.PodReasonInfeasible || conds[0].Message != want {
		t.Errorf("conditions = %+v, want Infeasible %q", conds, want)
	}
	// Reverted: nothing is pending any more.
	reverted := tooMuch.DeepCopy()
	reverted.Generation = huge.Generation + 1
	f.mustSync(t, reverted)
	if conds := f.resources().ResizeConditions(pod.UID); len(conds) != 0 {
		t.Errorf("conditions after the revert = %+v, want none", conds)
	}
}

// As the kubelet: a memory limit at or below what the container uses is
// refused before anything changes; the PodResizeInProgress condition says
// why, and the resize is made once the usage allows it.
func TestResizeMemoryBelowUsage(t *testing.T) {
	f, cg, pod := resizeFixture(t)
	app := containerID(pod, 0, "app", 0)
	parent := cg.PodCgroupParent(pod)
	cg.mu.Lock()
	cg.usage[parent] = 50 << 20
	cg.usage[parent+"/"+app] = 40 << 20
	cg.set = nil
	cg.mu.Unlock()

	smaller := resized(pod, "app", "200m", "32Mi")
	if _, err := f.sync(t, smaller); err == nil || !strings.Contains(err.Error(), "below current usage") {
		t.Fatalf("SyncPod = %v, want the resize refused", err)
	}
	if calls := f.rt.takeResized(); len(calls) != 0 {
		t.Errorf("resized below usage: %+v", calls)
	}
	cg.mu.Lock()
	set := len(cg.set)
	cg.mu.Unlock()
	if set != 0 {
		t.Errorf("the pod cgroup was changed %d times by a refused resize", set)
	}
	conds := f.resources().ResizeConditions(pod.UID)
	wantMsg := `cannot decrease memory limits: attempting to set container "app" memory limit (33554432) below current usage (41943040)`
	if len(conds) != 1 || conds[0].Type != v1.PodResizeInProgress || conds[0].Reason != v1.PodReasonError || conds[0].Message != wantMsg {
		t.Errorf("conditions = %+v, want PodResizeInProgress Error %q", conds, wantMsg)
	}
	if ev := f.events.take(); !hasEvent(ev, "ResizeError") {
		t.Errorf("events = %v, want ResizeError", ev)
	}

	cg.mu.Lock()
	cg.usage[parent+"/"+app] = 10 << 20
	cg.usage[parent] = 20 << 20
	cg.mu.Unlock()
	f.mustSync(t, smaller)
	if calls := f.rt.takeResized(); len(calls) != 1 || calls[0].res.MemoryLimitInBytes != 32<<20 {
		t.Errorf("updates once the usage allows = %+v, want app to 32Mi", calls)
	}
	if conds := f.resources().ResizeConditions(pod.UID); len(conds) != 0 {
		t.Errorf("conditions = %+v, want none", conds)
	}
}

// A restarted agent keeps what it granted and applied: a pending resize
// is not granted unchecked, a resize it made is not made again, and
// nothing restarts.
func TestResizeStateSurvivesRestart(t *testing.T) {
	f, _, pod := resizeFixture(t)
	bigger := resized(pod, "app", "400m", "64Mi")
	f.mustSync(t, bigger)
	f.rt.takeResized()

	// A new syncer over the same root dir and runtime: the agent restarted.
	cfg := f.s.cfg
	cfg.Resources = allocation.New(f.ctx, allocation.Config{Path: f.root + "/" + allocation.StateFile, Clock: f.clock})
	f.s = NewSyncer(cfg)
	f.observe(t, pod)
	f.resetCalls()
	f.mustSync(t, bigger)
	if got := f.changes(); len(got) != 0 {
		t.Errorf("after a restart the sync changed %v", got)
	}
	if calls := f.rt.takeResized(); len(calls) != 0 {
		t.Errorf("after a restart the resize was made again: %+v", calls)
	}
	if alloc, _ := f.resources().Allocated(pod.UID); !apiequality.Semantic.DeepEqual(alloc["app"].Limits, rl("400m", "64Mi")) {
		t.Errorf("allocation after restart = %v", alloc)
	}
}

// A container an agent before in-place resize started carries a hash of
// its whole spec, resources included: it is adopted, not restarted, and a
// resize of it is made in place.
func TestResizeAdoptsLegacyHash(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("old", []string{"app"})
	guaranteed(pod, "app", "200m", "64Mi")
	f.mustSync(t, pod)
	id := containerID(pod, 0, "app", 0)
	// Rewrite the annotation as the old agent wrote it, and forget what
	// this agent recorded.
	f.rt.Lock()
	f.rt.Containers[id].Annotations[kubecontainer.AnnotationContainerHash] = legacyHash(specOf(pod, "app"))
	f.rt.Unlock()
	if err := f.resources().Release(pod.UID); err != nil {
		t.Fatal(err)
	}
	f.observe(t, pod)
	f.resetCalls()
	f.mustSync(t, pod)
	if got := f.changes(); len(got) != 0 {
		t.Fatalf("an adopted container was changed: %v", got)
	}
	f.mustSync(t, resized(pod, "app", "300m", "64Mi"))
	if got := f.changes(); len(got) != 0 {
		t.Errorf("resizing an adopted container changed %v", got)
	}
	if calls := f.rt.takeResized(); len(calls) != 1 || calls[0].id != id {
		t.Errorf("updates = %+v, want the adopted container resized in place", calls)
	}
}

// legacyHash is the hash agents before in-place resize wrote: FNV-64a of
// the whole container's JSON, resources included.
func legacyHash(c *v1.Container) string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// A static pod's edit that changes its QoS class (the apiserver refuses
// such a resize) gets a new sandbox, in the new class's cgroup.
func TestResizeQOSChangeReplacesSandbox(t *testing.T) {
	f, _, pod := resizeFixture(t)
	burstable := pod.DeepCopy()
	burstable.Generation++
	specOf(burstable, "app").Resources.Limits = rl("", "64Mi")
	f.resetCalls()
	f.mustSync(t, burstable)
	want := []string{"StopContainer", "StopContainer", "StopPodSandbox", "RunPodSandbox", "CreateContainer", "StartContainer", "CreateContainer", "StartContainer"}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
	st := f.cached(t, burstable)
	if sb := newestSandbox(st); sb == nil || sb.Annotations[kubecontainer.AnnotationSandboxQOS] != string(v1.PodQOSBurstable) {
		t.Errorf("new sandbox = %+v, want one made Burstable", sb)
	}
}
