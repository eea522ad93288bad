package podworkers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/cgroups"
)

// fakeCgroups records what the syncer asks of the pod's cgroup, and which
// runtime calls had been made by then. strays are processes in the pod's
// cgroup: RemovePod refuses while there are any, KillPodProcesses kills
// them.
type fakeCgroups struct {
	mu        sync.Mutex
	rt        *spyRuntime
	ensured   [][]string // the runtime's mutating calls before each EnsurePod
	removed   []types.UID
	killed    []types.UID
	strays    []int
	ensureErr error
	removeErr error
	// set are the configurations written by SetPod, in order; usage is
	// the memory each cgroup uses (by path) for Stats.
	set     []cgroups.ResourceConfig
	applied *cgroups.ResourceConfig
	usage   map[string]uint64
}

var _ podCgroups = (*fakeCgroups)(nil)

func (f *fakeCgroups) PodCgroupParent(pod *v1.Pod) string {
	return "/kubepods/burstable/pod" + string(pod.UID)
}

func (f *fakeCgroups) EnsurePod(_ context.Context, pod *v1.Pod) error {
	var before []string
	for _, c := range f.rt.GetCalls() {
		if slices.Contains(mutatingCalls, c) {
			before = append(before, c)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ensured = append(f.ensured, before)
	if f.ensureErr == nil {
		res := cgroups.PodResources(pod)
		f.applied = &res
	}
	return f.ensureErr
}

func (f *fakeCgroups) SetPod(_ context.Context, _ *v1.Pod, res cgroups.ResourceConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, res)
	if f.ensureErr == nil {
		f.applied = &res
	}
	return f.ensureErr
}

func (f *fakeCgroups) PodApplied(types.UID) (cgroups.ResourceConfig, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.applied == nil {
		return cgroups.ResourceConfig{}, false
	}
	return *f.applied, true
}

func (f *fakeCgroups) FindPodCgroup(uid types.UID) (string, bool) {
	return "/kubepods/burstable/pod" + string(uid), true
}

func (f *fakeCgroups) ContainerCgroup(parent, id string) string { return parent + "/" + id }

func (f *fakeCgroups) Stats(path string) (*cgroups.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.usage[path]
	if !ok {
		return nil, fmt.Errorf("no cgroup %s", path)
	}
	return &cgroups.Stats{Memory: cgroups.MemoryStats{Usage: u}}, nil
}

func (f *fakeCgroups) RemovePod(_ context.Context, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removeErr != nil {
		return f.removeErr
	}
	if len(f.strays) > 0 {
		return fmt.Errorf("cgroup of %s still holds processes %v: %w", uid, f.strays, errdefs.ErrFailedPrecondition)
	}
	f.removed = append(f.removed, uid)
	return nil
}

func (f *fakeCgroups) KillPodProcesses(_ context.Context, uid types.UID) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, uid)
	pids := f.strays
	f.strays = nil
	return pids, nil
}

func withCgroups(f *syncerFixture, memory int64) *fakeCgroups {
	cg := &fakeCgroups{rt: f.rt}
	f.s.cfg.Cgroups = cg
	f.s.cfg.MemoryCapacity = memory
	return cg
}

func TestSyncPodCgroup(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	cg := withCgroups(f, 10<<30)
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	})
	f.mustSync(t, pod)

	if len(cg.ensured) != 1 || len(cg.ensured[0]) != 0 {
		t.Fatalf("EnsurePod calls (runtime changes before each) = %v, want one before any runtime change", cg.ensured)
	}
	parent := f.s.sandboxConfig(pod, 0).GetLinux().GetCgroupParent()
	if want := "/kubepods/burstable/pod" + string(pod.UID); parent != want {
		t.Errorf("sandbox cgroup parent = %q, want %q", parent, want)
	}
	f.rt.mu.Lock()
	adj := f.rt.created[0].GetLinux().GetResources().GetOomScoreAdj()
	f.rt.mu.Unlock()
	if adj != 900 {
		t.Errorf("oom_score_adj = %d, want 900 (Burstable, 1Gi of 10Gi requested)", adj)
	}

	// A sync with nothing to do still keeps the cgroup up to date.
	f.mustSync(t, pod)
	if len(cg.ensured) != 2 {
		t.Errorf("EnsurePod calls = %d, want one per sync", len(cg.ensured))
	}
}

func TestSyncPodCgroupFailure(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	cg := withCgroups(f, 0)
	boom := errors.New("read-only cgroupfs")
	cg.ensureErr = boom
	pod := newPod("web", []string{"app"})
	if _, err := f.sync(t, pod); !errors.Is(err, boom) {
		t.Fatalf("SyncPod = %v, want %v", err, boom)
	}
	if got := f.changes(); len(got) != 0 {
		t.Errorf("runtime changes without a pod cgroup: %v", got)
	}

	// Once the pod runs, a failure to update its cgroup does not stop it.
	cg.ensureErr = nil
	f.mustSync(t, pod)
	cg.ensureErr = boom
	f.rt.mu.Lock()
	adj := f.rt.created[0].GetLinux().GetResources().GetOomScoreAdj()
	f.rt.mu.Unlock()
	if adj != 0 {
		t.Errorf("oom_score_adj = %d without a known memory capacity, want 0", adj)
	}
	if _, err := f.sync(t, pod); err != nil {
		t.Errorf("SyncPod of a running pod whose cgroup update failed: %v, want nil", err)
	}
}

func TestSyncTerminatedPodRemovesCgroup(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	cg := withCgroups(f, 0)
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatingPod(f.ctx, pod, f.cached(t, pod), 1); err != nil {
		t.Fatal(err)
	}
	busy := errors.New("processes remain")
	cg.removeErr = busy
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); !errors.Is(err, busy) {
		t.Fatalf("SyncTerminatedPod = %v, want %v", err, busy)
	}
	f.status.mu.Lock()
	forgotten := len(f.status.removed)
	f.status.mu.Unlock()
	if forgotten != 0 {
		t.Errorf("the pod was forgotten while its cgroup could not be removed")
	}
	cg.removeErr = nil
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !slices.Equal(cg.removed, []types.UID{pod.UID}) {
		t.Errorf("RemovePod calls = %v, want [%s]", cg.removed, pod.UID)
	}
	if len(cg.killed) != 0 {
		t.Errorf("processes killed for an error other than busy cgroups: %v", cg.killed)
	}
}

// Processes left in the cgroup of a pod the runtime holds nothing of (a
// sandbox's init that containerd forgot) are killed, and the cgroup
// removed.
func TestSyncTerminatedPodKillsStrays(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	cg := withCgroups(f, 0)
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatingPod(f.ctx, pod, f.cached(t, pod), 1); err != nil {
		t.Fatal(err)
	}
	cg.strays = []int{4242}
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); err != nil {
		t.Fatalf("SyncTerminatedPod: %v", err)
	}
	if !slices.Equal(cg.killed, []types.UID{pod.UID}) || !slices.Equal(cg.removed, []types.UID{pod.UID}) {
		t.Errorf("killed %v, removed %v; want the pod's cgroup emptied, then removed", cg.killed, cg.removed)
	}
}
