package eviction

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const mi = 1 << 20

// node is what fakeStats reports: the node's memory and disk, and the
// pods' usage.
type node struct {
	memCapacity, memWorkingSet, memInactive uint64
	fsCapacity, fsAvailable                 uint64
	inodes, inodesFree                      uint64
	maxPID, procs                           int64
	pods                                    map[types.UID]podUse
}

type podUse struct {
	memory    uint64 // working set
	procs     uint64
	rootfs    uint64 // one container's writable layer
	logs      uint64
	volumes   map[string]uint64
	container string
}

// fakeStats serves Summaries of n at the fake clock's time; safe for
// concurrent use.
type fakeStats struct {
	mu    sync.Mutex
	clock *clocktesting.FakeClock
	n     node
	reads int
}

func (f *fakeStats) set(change func(n *node)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.n)
}

func (f *fakeStats) Summary(context.Context, bool) *statsapi.Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	at := metav1.NewTime(f.clock.Now())
	n := f.n
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{Time: at, UsageBytes: ptr.To(n.memWorkingSet + n.memInactive), WorkingSetBytes: ptr.To(n.memWorkingSet), AvailableBytes: ptr.To(n.memCapacity - n.memWorkingSet)},
		Fs:     &statsapi.FsStats{Time: at, CapacityBytes: ptr.To(n.fsCapacity), AvailableBytes: ptr.To(n.fsAvailable), Inodes: ptr.To(n.inodes), InodesFree: ptr.To(n.inodesFree)},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{
			Time: at, CapacityBytes: ptr.To(n.fsCapacity), AvailableBytes: ptr.To(n.fsAvailable), Inodes: ptr.To(n.inodes), InodesFree: ptr.To(n.inodesFree),
		}},
		Rlimit: &statsapi.RlimitStats{Time: at, MaxPID: ptr.To(n.maxPID), NumOfRunningProcesses: ptr.To(n.procs)},
	}}
	var podsWS uint64
	for uid, u := range n.pods {
		podsWS += u.memory
		name := u.container
		if name == "" {
			name = "main"
		}
		ps := statsapi.PodStats{
			PodRef: statsapi.PodReference{UID: string(uid)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr.To(u.memory)},
			Containers: []statsapi.ContainerStats{{
				Name:   name,
				Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr.To(u.memory)},
				Rootfs: &statsapi.FsStats{UsedBytes: ptr.To(u.rootfs), InodesUsed: ptr.To(uint64(1))},
				Logs:   &statsapi.FsStats{UsedBytes: ptr.To(u.logs), InodesUsed: ptr.To(uint64(1))},
			}},
			ProcessStats: &statsapi.ProcessStats{ProcessCount: ptr.To(u.procs)},
		}
		eph := u.rootfs + u.logs
		for name, used := range u.volumes {
			ps.VolumeStats = append(ps.VolumeStats, statsapi.VolumeStats{Name: name, FsStats: statsapi.FsStats{UsedBytes: ptr.To(used), InodesUsed: ptr.To(uint64(1))}})
			eph += used
		}
		ps.EphemeralStorage = &statsapi.FsStats{UsedBytes: ptr.To(eph)}
		s.Pods = append(s.Pods, ps)
	}
	s.Node.SystemContainers = []statsapi.ContainerStats{{
		Name:   statsapi.SystemContainerPods,
		Memory: &statsapi.MemoryStats{Time: at, UsageBytes: ptr.To(podsWS), WorkingSetBytes: ptr.To(podsWS), AvailableBytes: ptr.To(n.memCapacity - podsWS)},
	}}
	return s
}

// fakePods are the node's pods; a pod evicted or retired is gone at once.
type fakePods struct {
	mu       sync.Mutex
	pods     []*v1.Pod
	ended    map[types.UID]bool
	finished map[types.UID]bool
}

func (f *fakePods) ActivePods() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.Pod
	for _, p := range f.pods {
		if !f.ended[p.UID] && !f.finished[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakePods) Get(uid types.UID) *v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.UID == uid {
			return p
		}
	}
	return nil
}

func (f *fakePods) Finished() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.Pod
	for _, p := range f.pods {
		if f.finished[p.UID] && !f.ended[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakePods) Gone(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended[uid]
}

// fakeLoop answers the manager's requests as the syncLoop would and
// records them.
type fakeLoop struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *fakeLoop) run(ctx context.Context, m *Manager, pods *fakePods, stats *fakeStats) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-m.Requests():
			l.mu.Lock()
			l.reqs = append(l.reqs, r)
			l.mu.Unlock()
			pods.mu.Lock()
			switch r.Op {
			case OpEvict, OpRetire:
				pods.ended[r.Pod.UID] = true
				stats.set(func(n *node) { delete(n.pods, r.Pod.UID) })
			case OpRestart:
				delete(pods.ended, r.Pod.UID)
			}
			pods.mu.Unlock()
			r.Done(true)
		}
	}
}

func (l *fakeLoop) requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// recorder keeps the events.
type recorder struct {
	mu     sync.Mutex
	events []string
	annots []map[string]string
}

func (r *recorder) Eventf(ref *v1.ObjectReference, eventType, reason, _ string, _ ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ref.Kind+" "+ref.Name+" "+eventType+" "+reason)
}

func (r *recorder) AnnotatedEventf(ref *v1.ObjectReference, a map[string]string, eventType, reason, f string, args ...any) {
	r.mu.Lock()
	r.annots = append(r.annots, a)
	r.mu.Unlock()
	r.Eventf(ref, eventType, reason, f, args...)
}

// fakeImages records its calls and frees what free says.
type fakeImages struct {
	calls int
	free  func()
}

func (f *fakeImages) DeleteUnusedImages(context.Context) error {
	f.calls++
	if f.free != nil {
		f.free()
	}
	return nil
}

// harness is a Manager with fakes around it and a running fake syncLoop.
type harness struct {
	m       *Manager
	clock   *clocktesting.FakeClock
	stats   *fakeStats
	pods    *fakePods
	loop    *fakeLoop
	events  *recorder
	images  *fakeImages
	evicted []string
}

func newHarness(t *testing.T, cfg Config, n node, pods ...*v1.Pod) *harness {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &harness{
		clock:  clock,
		stats:  &fakeStats{clock: clock, n: n},
		pods:   &fakePods{pods: pods, ended: map[types.UID]bool{}, finished: map[types.UID]bool{}},
		loop:   &fakeLoop{},
		events: &recorder{},
		images: &fakeImages{},
	}
	cfg.Stats, cfg.Pods, cfg.Clock, cfg.Events, cfg.Images, cfg.NodeName = h.stats, h.pods, clock, h.events, h.images, "n1"
	cfg.OnEviction = func(signal string) { h.evicted = append(h.evicted, signal) }
	h.m = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.loop.run(ctx, h.m, h.pods, h.stats)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// sync runs one round at the clock's time and returns the names of the
// pods evicted.
func (h *harness) sync(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, p := range h.m.synchronize(context.Background()) {
		names = append(names, p.Name)
	}
	return names
}

// healthy is a node with plenty of everything.
func healthy() node {
	return node{
		memCapacity: 8192 * mi, memWorkingSet: 1024 * mi,
		fsCapacity: 100000 * mi, fsAvailable: 50000 * mi, inodes: 1000000, inodesFree: 900000,
		maxPID: 32768, procs: 300,
		pods: map[types.UID]podUse{},
	}
}

// pod builds a pod; res gives its container's requests and limits as
// "requests/limits" pairs per resource.
func pod(name string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(rl v1.ResourceList) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = rl }
}

func limits(rl v1.ResourceList) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits = rl }
}

func static(p *v1.Pod) { p.Annotations["kubernetes.io/config.source"] = "file" }

func priorityClass(name string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.PriorityClassName = name }
}

func mem(s string) v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse(s)} }

func hardThresholds(t *testing.T, hard map[string]string) []Threshold {
	t.Helper()
	ts, err := ParseThresholds(ThresholdSettings{Hard: hard})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
