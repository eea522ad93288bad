package pleg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

const (
	sbReady    = runtimeapi.PodSandboxState_SANDBOX_READY
	sbNotReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	cRunning   = runtimeapi.ContainerState_CONTAINER_RUNNING
	cExited    = runtimeapi.ContainerState_CONTAINER_EXITED
	cCreated   = runtimeapi.ContainerState_CONTAINER_CREATED
	cUnknown   = runtimeapi.ContainerState_CONTAINER_UNKNOWN
)

// world is what the fake runtime holds at one relist.
type world struct {
	sandboxes  []*critest.FakePodSandbox
	containers []*critest.FakeContainer
}

func sandbox(id string, uid types.UID, state runtimeapi.PodSandboxState) *critest.FakePodSandbox {
	labels := map[string]string{}
	if uid != "" {
		labels[kubecontainer.LabelPodUID] = string(uid)
	}
	return &critest.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "pod-" + string(uid), Namespace: "ns", Uid: string(uid)},
		State:     state,
		CreatedAt: t0.UnixNano(),
		Labels:    labels,
	}}
}

func container(id, sandboxID string, uid types.UID, state runtimeapi.ContainerState) *critest.FakeContainer {
	labels := map[string]string{}
	if uid != "" {
		labels[kubecontainer.LabelPodUID] = string(uid)
	}
	return &critest.FakeContainer{
		SandboxID: sandboxID,
		ContainerStatus: runtimeapi.ContainerStatus{
			Id:        id,
			Metadata:  &runtimeapi.ContainerMetadata{Name: id},
			State:     state,
			CreatedAt: t0.UnixNano(),
			Labels:    labels,
		},
	}
}

func (w world) install(rt *critest.FakeRuntimeService) {
	rt.SetFakeSandboxes(w.sandboxes)
	rt.SetFakeContainers(w.containers)
}

type plegFixture struct {
	rt    *critest.FakeRuntimeService
	clock *testingclock.FakeClock
	cache *Cache
	g     *Generic
}

func newPLEG(capacity int) *plegFixture {
	f := &plegFixture{
		rt:    critest.NewFakeRuntimeService(),
		clock: testingclock.NewFakeClock(t0),
		cache: NewCache(),
	}
	f.g = NewGeneric(GenericConfig{
		Runtime:         f.rt,
		Cache:           f.cache,
		RelistPeriod:    time.Second,
		ChannelCapacity: capacity,
		Clock:           f.clock,
	})
	return f
}

func (f *plegFixture) relist(t *testing.T) {
	t.Helper()
	if err := f.g.Relist(context.Background()); err != nil {
		t.Fatalf("Relist: %v", err)
	}
}

func (f *plegFixture) resetCalls() {
	f.rt.Lock()
	f.rt.Called = nil
	f.rt.Unlock()
}

// drain returns the events waiting in the channel, sorted.
func (f *plegFixture) drain() []*Event {
	var out []*Event
	for {
		select {
		case e := <-f.g.Watch():
			out = append(out, e)
		default:
			slices.SortFunc(out, func(a, b *Event) int {
				return strings.Compare(eventString(a), eventString(b))
			})
			return out
		}
	}
}

func eventString(e *Event) string { return fmt.Sprintf("%s/%s/%s", e.ID, e.Type, e.Data) }

func eventStrings(es []*Event) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, eventString(e))
	}
	return out
}

func TestRelistEvents(t *testing.T) {
	tests := []struct {
		name   string
		before world
		after  world
		want   []string // sorted
	}{
		{
			name:  "new pod",
			after: world{[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)}, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}},
			want:  []string{"p/ContainerStarted/c1", "p/ContainerStarted/sb1"},
		},
		{
			name:   "container started",
			before: world{[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)}, nil},
			after:  world{[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)}, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}},
			want:   []string{"p/ContainerStarted/c1"},
		},
		{
			name:   "container died",
			before: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}},
			after:  world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cExited)}},
			want:   []string{"p/ContainerDied/c1"},
		},
		{
			name:   "exited container removed",
			before: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cExited)}},
			after:  world{},
			want:   []string{"p/ContainerRemoved/c1"},
		},
		{
			name:   "running container vanished",
			before: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}},
			after:  world{},
			want:   []string{"p/ContainerDied/c1", "p/ContainerRemoved/c1"},
		},
		{
			name:   "created container removed",
			before: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cCreated)}},
			after:  world{},
			want:   []string{"p/ContainerRemoved/c1"},
		},
		{
			name:  "container created",
			after: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cCreated)}},
			want:  []string{"p/ContainerChanged/c1"},
		},
		{
			name:   "running container turns unknown",
			before: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}},
			after:  world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cUnknown)}},
			want:   []string{"p/ContainerChanged/c1"},
		},
		{
			name:   "created container starts",
			before: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cCreated)}},
			after:  world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}},
			want:   []string{"p/ContainerStarted/c1"},
		},
		{
			name:  "exited container appears",
			after: world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cExited)}},
			want:  []string{"p/ContainerDied/c1"},
		},
		{
			name:   "sandbox stopped",
			before: world{[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)}, nil},
			after:  world{[]*critest.FakePodSandbox{sandbox("sb1", "p", sbNotReady)}, nil},
			want:   []string{"p/ContainerDied/sb1"},
		},
		{
			name:   "ready sandbox removed",
			before: world{[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)}, nil},
			after:  world{},
			want:   []string{"p/ContainerDied/sb1", "p/ContainerRemoved/sb1"},
		},
		{
			name: "two pods, one changed",
			before: world{nil, []*critest.FakeContainer{
				container("c1", "sb1", "p", cRunning), container("c2", "sb2", "q", cRunning),
			}},
			after: world{nil, []*critest.FakeContainer{
				container("c1", "sb1", "p", cRunning), container("c2", "sb2", "q", cExited),
			}},
			want: []string{"q/ContainerDied/c2"},
		},
		{
			name:   "objects without pod UID label are ignored",
			before: world{[]*critest.FakePodSandbox{sandbox("sbx", "", sbReady)}, []*critest.FakeContainer{container("cx", "sbx", "", cRunning)}},
			after:  world{nil, []*critest.FakeContainer{container("cy", "sbx", "", cRunning)}},
			want:   []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPLEG(0)
			tt.before.install(f.rt)
			f.relist(t)
			f.drain()

			f.clock.Step(time.Second)
			ts := f.clock.Now()
			tt.after.install(f.rt)
			f.relist(t)
			got := f.drain()
			if gs := eventStrings(got); !slices.Equal(gs, tt.want) {
				t.Errorf("events = %v\nwant %v", gs, tt.want)
			}
			for _, e := range got {
				if !e.Time.Equal(ts) {
					t.Errorf("event %s has Time %v, want the relist's %v", eventString(e), e.Time, ts)
				}
			}
			// Every pod with an event has a cache entry as of the relist,
			// reflecting the runtime after the change.
			for _, e := range got {
				st, err := f.cache.Get(e.ID)
				if err != nil {
					t.Fatalf("cache.Get(%s): %v", e.ID, err)
				}
				if !st.TimeStamp.Equal(ts) {
					t.Errorf("cache entry of %s has TimeStamp %v, want %v", e.ID, st.TimeStamp, ts)
				}
				n := 0
				for _, c := range tt.after.containers {
					if kubecontainer.PodUIDFromLabels(c.Labels) == e.ID {
						n++
					}
				}
				if len(st.Containers) != n {
					t.Errorf("cache entry of %s has %d containers, want %d", e.ID, len(st.Containers), n)
				}
			}
			if f.g.Dropped() != 0 {
				t.Errorf("Dropped = %d", f.g.Dropped())
			}
		})
	}
}

func TestRelistCacheEntry(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cRunning), container("c2", "sb1", "p", cExited)},
	}.install(f.rt)
	ts := f.clock.Now()
	f.relist(t)

	st, err := f.cache.Get("p")
	if err != nil {
		t.Fatalf("cache.Get: %v", err)
	}
	if !st.TimeStamp.Equal(ts) || st.ID != "p" || len(st.Sandboxes) != 1 || len(st.Containers) != 2 {
		t.Errorf("cache entry = %+v; want 1 sandbox and 2 containers at %v", st, ts)
	}
	// The relist's time counts for every pod, known or not.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := f.cache.GetNewerThan(ctx, "unknown", ts); err != nil {
		t.Errorf("GetNewerThan(unknown, relist time): %v", err)
	}

	// An unchanged pod keeps its entry, which is current as of the later
	// relist.
	f.clock.Step(time.Second)
	ts2 := f.clock.Now()
	f.relist(t)
	got, err := f.cache.GetNewerThan(ctx, "p", ts2)
	if err != nil {
		t.Fatalf("GetNewerThan(p, second relist): %v", err)
	}
	if got != st {
		t.Errorf("unchanged pod's entry was replaced")
	}
}

func TestRelistUnchangedPodsCostNoStatusCalls(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady), sandbox("sb2", "q", sbNotReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cRunning), container("c2", "sb2", "q", cExited)},
	}.install(f.rt)
	f.relist(t)
	f.drain()

	f.resetCalls()
	f.clock.Step(time.Second)
	f.relist(t)
	if got := f.drain(); len(got) != 0 {
		t.Errorf("events for unchanged pods: %v", eventStrings(got))
	}
	if err := f.rt.AssertCalls([]string{"ListPodSandbox", "ListContainers"}); err != nil {
		t.Error(err)
	}
}

func TestRelistIgnoresUnlabelledObjects(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sbx", "", sbReady)},
		[]*critest.FakeContainer{container("cx", "sbx", "", cRunning)},
	}.install(f.rt)
	f.relist(t)
	if got := f.drain(); len(got) != 0 {
		t.Errorf("events = %v", eventStrings(got))
	}
	if err := f.rt.AssertCalls([]string{"ListPodSandbox", "ListContainers"}); err != nil {
		t.Error(err)
	}
	f.cache.mu.Lock()
	n := len(f.cache.pods)
	f.cache.mu.Unlock()
	if n != 0 {
		t.Errorf("cache holds %d entries, want 0", n)
	}
}

func TestRelistFullChannelDropsAndCounts(t *testing.T) {
	f := newPLEG(2)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{
			container("c1", "sb1", "p", cRunning),
			container("c2", "sb1", "p", cRunning),
			container("c3", "sb1", "p", cRunning),
		},
	}.install(f.rt)
	f.relist(t) // 4 events, room for 2; never blocks
	if got := f.g.Dropped(); got != 2 {
		t.Errorf("Dropped = %d, want 2", got)
	}
	if got := f.drain(); len(got) != 2 {
		t.Errorf("%d events delivered, want 2", len(got))
	}
	// The cache is refreshed all the same.
	st, err := f.cache.Get("p")
	if err != nil || len(st.Containers) != 3 {
		t.Errorf("cache entry = %+v, %v; want 3 containers", st, err)
	}

	// Room again: later events get through, and the count stays.
	f.clock.Step(time.Second)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{
			container("c1", "sb1", "p", cExited),
			container("c2", "sb1", "p", cRunning),
			container("c3", "sb1", "p", cRunning),
		},
	}.install(f.rt)
	f.relist(t)
	if got := eventStrings(f.drain()); !slices.Equal(got, []string{"p/ContainerDied/c1"}) {
		t.Errorf("events = %v", got)
	}
	if got := f.g.Dropped(); got != 2 {
		t.Errorf("Dropped = %d, want 2", got)
	}
}

func TestRelistStatusErrorIsRetried(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cRunning)},
	}.install(f.rt)
	boom := errors.New("boom")
	f.rt.InjectError("ContainerStatus", boom)
	f.relist(t) // a status error fails the pod, not the relist
	if got := f.drain(); len(got) != 0 {
		t.Errorf("events for a pod whose status could not be read: %v", eventStrings(got))
	}
	if _, err := f.cache.Get("p"); !errors.Is(err, boom) {
		t.Errorf("cache error = %v, want %v", err, boom)
	}

	// Nothing changed, but the pod is read again.
	f.resetCalls()
	f.clock.Step(time.Second)
	ts := f.clock.Now()
	f.relist(t)
	if calls := f.rt.GetCalls(); !slices.Contains(calls, "ContainerStatus") {
		t.Errorf("pod was not read again; calls = %v", calls)
	}
	st, err := f.cache.Get("p")
	if err != nil || !st.TimeStamp.Equal(ts) || len(st.Containers) != 1 {
		t.Errorf("cache entry = %+v, %v; want 1 container at %v", st, err, ts)
	}

	// Once read, it is not read again while unchanged.
	f.resetCalls()
	f.clock.Step(time.Second)
	f.relist(t)
	if err := f.rt.AssertCalls([]string{"ListPodSandbox", "ListContainers"}); err != nil {
		t.Error(err)
	}
}

// A change whose status read failed must still be announced once the
// status can be read: the kubelet keeps the pod's old record for exactly
// this ("so that the change will be detected again in the next relist").
func TestRelistStatusErrorKeepsEvents(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cRunning)},
	}.install(f.rt)
	f.rt.InjectError("ContainerStatus", errors.New("boom"))
	f.relist(t)
	f.drain()

	f.clock.Step(time.Second)
	f.relist(t)
	want := []string{"p/ContainerStarted/c1", "p/ContainerStarted/sb1"}
	if got := eventStrings(f.drain()); !slices.Equal(got, want) {
		t.Errorf("events after the status could be read = %v, want %v (the change was never announced)", got, want)
	}
}

// A pod whose last objects vanished is read from the relist's own lists
// (no status call that could fail): its cache entry becomes an empty status
// without error, so a pod re-added with the same UID (static pod UIDs are
// stable, DESIGN.md rule 7) syncs against "nothing runs".
func TestRelistVanishedPodNeedsNoStatusRead(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbNotReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cExited)},
	}.install(f.rt)
	f.relist(t)
	f.drain()

	world{}.install(f.rt)
	f.rt.InjectError("PodSandboxStatus", errors.New("transient"))
	f.rt.InjectError("ContainerStatus", errors.New("transient"))
	f.clock.Step(time.Second)
	ts := f.clock.Now()
	f.relist(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := f.cache.GetNewerThan(ctx, "p", ts)
	if err != nil {
		t.Errorf("GetNewerThan after the pod vanished = %v, want no error", err)
	} else if len(st.Sandboxes) != 0 || len(st.Containers) != 0 {
		t.Errorf("status = %+v, want empty", st)
	}
}

func TestRelistListErrors(t *testing.T) {
	for _, call := range []string{"ListPodSandbox", "ListContainers"} {
		t.Run(call, func(t *testing.T) {
			f := newPLEG(0)
			world{nil, []*critest.FakeContainer{container("c1", "sb1", "p", cRunning)}}.install(f.rt)
			boom := errors.New("boom")
			f.rt.InjectError(call, boom)
			if err := f.g.Relist(context.Background()); !errors.Is(err, boom) {
				t.Fatalf("Relist = %v, want %v", err, boom)
			}
			if err := f.g.Healthy(); err == nil {
				t.Error("Healthy after only a failed relist = nil")
			}
			// The failed relist changed nothing: the next one sees the
			// container as new.
			f.relist(t)
			if got := eventStrings(f.drain()); !slices.Equal(got, []string{"p/ContainerStarted/c1"}) {
				t.Errorf("events = %v", got)
			}
		})
	}
}

func TestHealthy(t *testing.T) {
	f := newPLEG(0)
	if err := f.g.Healthy(); err == nil {
		t.Error("Healthy before the first relist = nil")
	}
	f.relist(t)
	steps := []struct {
		step    time.Duration
		healthy bool
	}{
		{0, true},
		{MaxRelistAge, true},
		{time.Second, false},
		{time.Hour, false},
	}
	for _, s := range steps {
		f.clock.Step(s.step)
		if err := f.g.Healthy(); (err == nil) != s.healthy {
			t.Errorf("%v after the relist: Healthy = %v, want healthy=%v", f.clock.Since(t0), err, s.healthy)
		}
	}
	f.relist(t)
	if err := f.g.Healthy(); err != nil {
		t.Errorf("Healthy right after a relist = %v", err)
	}
}

func TestRunRelistsEveryPeriod(t *testing.T) {
	f := newPLEG(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.g.Run(ctx)
	}()
	relists := func() int {
		n := 0
		for _, c := range f.rt.GetCalls() {
			if c == "ListPodSandbox" {
				n++
			}
		}
		return n
	}
	for i := 1; i <= 3; i++ {
		polltest.True(t, 5*time.Second, fmt.Sprintf("relist %d", i), func() bool { return relists() == i && f.clock.HasWaiters() })
		f.clock.Step(time.Second)
	}
	polltest.True(t, 5*time.Second, "relist 4", func() bool { return relists() == 4 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// In a pod where one container changed, only that container's status is
// read; the unchanged container and sandbox come from the cache, and no
// further list call is made.
func TestRelistReadsOnlyWhatChanged(t *testing.T) {
	f := newPLEG(0)
	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cRunning), container("c2", "sb1", "p", cRunning)},
	}.install(f.rt)
	f.relist(t)
	f.drain()

	world{
		[]*critest.FakePodSandbox{sandbox("sb1", "p", sbReady)},
		[]*critest.FakeContainer{container("c1", "sb1", "p", cRunning), container("c2", "sb1", "p", cExited)},
	}.install(f.rt)
	f.resetCalls()
	f.clock.Step(time.Second)
	f.relist(t)
	if got, want := eventStrings(f.drain()), []string{"p/ContainerDied/c2"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if err := f.rt.AssertCalls([]string{"ListPodSandbox", "ListContainers", "ContainerStatus"}); err != nil {
		t.Error(err)
	}
	st, _ := f.cache.Get("p")
	if len(st.Containers) != 2 || len(st.Sandboxes) != 1 {
		t.Fatalf("cached status = %+v, want both containers and the sandbox", st)
	}
	for _, c := range st.Containers {
		if want := map[string]runtimeapi.ContainerState{"c1": cRunning, "c2": cExited}[c.ID]; c.State != want {
			t.Errorf("container %s state %v, want %v", c.ID, c.State, want)
		}
	}
}
