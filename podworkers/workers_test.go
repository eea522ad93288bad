package podworkers

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/pleg"
)

const (
	kindSync        = "sync"
	kindTerminating = "terminating"
	kindTerminated  = "terminated"
)

// syncCall is one call the fake syncer received.
type syncCall struct {
	kind   string
	uid    types.UID
	pod    *v1.Pod
	status *kubecontainer.PodStatus
	grace  int64
	// n numbers the calls of the fake, from 1.
	n int
}

func (c syncCall) String() string {
	if c.kind == kindTerminating {
		return fmt.Sprintf("%s(%d)", c.kind, c.grace)
	}
	return c.kind
}

// fakeSyncer records calls and checks that calls for one pod never
// overlap. hook, when set, runs inside each call and decides its result; it
// may block.
type fakeSyncer struct {
	mu       sync.Mutex
	calls    []syncCall
	done     int
	inflight map[types.UID]int
	overlaps []string
	hook     func(ctx context.Context, c syncCall) (SyncResult, error)
}

var _ podSyncer = (*fakeSyncer)(nil)

func newFakeSyncer() *fakeSyncer {
	return &fakeSyncer{inflight: map[types.UID]int{}}
}

func (f *fakeSyncer) setHook(h func(ctx context.Context, c syncCall) (SyncResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

func (f *fakeSyncer) do(ctx context.Context, c syncCall) (SyncResult, error) {
	f.mu.Lock()
	c.n = len(f.calls) + 1
	f.calls = append(f.calls, c)
	f.inflight[c.uid]++
	if f.inflight[c.uid] > 1 {
		f.overlaps = append(f.overlaps, fmt.Sprintf("%s of %s overlaps another call", c.kind, c.uid))
	}
	hook := f.hook
	f.mu.Unlock()

	runtime.Gosched() // give an overlapping call a chance to show
	var res SyncResult
	var err error
	if hook != nil {
		res, err = hook(ctx, c)
	}

	f.mu.Lock()
	f.inflight[c.uid]--
	f.done++
	f.mu.Unlock()
	return res, err
}

func (f *fakeSyncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error) {
	return f.do(ctx, syncCall{kind: kindSync, uid: pod.UID, pod: pod, status: status})
}

func (f *fakeSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (SyncResult, error) {
	return f.do(ctx, syncCall{kind: kindTerminating, uid: pod.UID, pod: pod, status: status, grace: gracePeriod})
}

func (f *fakeSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error) {
	return f.do(ctx, syncCall{kind: kindTerminated, uid: pod.UID, pod: pod, status: status})
}

func (f *fakeSyncer) snapshot() ([]syncCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls), f.done
}

func (f *fakeSyncer) kinds() []string {
	calls, _ := f.snapshot()
	out := []string{}
	for _, c := range calls {
		out = append(out, c.String())
	}
	return out
}

func (f *fakeSyncer) waitCalls(t *testing.T, n int) []syncCall {
	t.Helper()
	polltest.True(t, 5*time.Second, fmt.Sprintf("%d sync calls", n), func() bool {
		calls, _ := f.snapshot()
		return len(calls) >= n
	})
	calls, _ := f.snapshot()
	return calls
}

func (f *fakeSyncer) waitDone(t *testing.T, n int) {
	t.Helper()
	polltest.True(t, 5*time.Second, fmt.Sprintf("%d finished sync calls", n), func() bool {
		_, done := f.snapshot()
		return done >= n
	})
}

func (f *fakeSyncer) checkNoOverlap(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.overlaps {
		t.Error(o)
	}
}

// gates let a test hold calls of the fake: call n blocks until gate n is
// opened or its ctx ends (then it returns ctx's error).
type gates struct {
	mu sync.Mutex
	ch map[int]chan struct{}
}

func newGates(ns ...int) *gates {
	g := &gates{ch: map[int]chan struct{}{}}
	for _, n := range ns {
		g.ch[n] = make(chan struct{})
	}
	return g
}

func (g *gates) wait(ctx context.Context, n int) error {
	g.mu.Lock()
	ch, ok := g.ch[n]
	g.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gates) open(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch[n])
}

type workersFixture struct {
	syncer *fakeSyncer
	cache  *pleg.Cache
	clock  *testingclock.FakeClock
	w      *Workers
	ctx    context.Context
}

func newWorkers(t *testing.T, resync time.Duration) *workersFixture {
	t.Helper()
	f := &workersFixture{
		syncer: newFakeSyncer(),
		cache:  pleg.NewCache(),
		clock:  testingclock.NewFakeClock(t0),
	}
	// The runtime was observed (a relist ran) just before the test starts;
	// until then GetNewerThan would wait.
	f.cache.UpdateTime(t0.Add(-time.Second))
	f.w = New(Config{Syncer: f.syncer, Cache: f.cache, Clock: f.clock, ResyncInterval: resync})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	f.ctx = ctx
	t.Cleanup(func() {
		cancel()
		done := make(chan struct{})
		go func() { f.w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("workers did not stop after cancel")
		}
	})
	return f
}

func (f *workersFixture) update(typ UpdateType, pod *v1.Pod) {
	f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: typ, Pod: pod})
}

func (f *workersFixture) kill(pod *v1.Pod, grace *int64) {
	f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: Kill, Pod: pod, GracePeriod: grace})
}

func (f *workersFixture) state(uid types.UID) (podState, bool) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	st, ok := f.w.pods[uid]
	if !ok {
		return podState{}, false
	}
	return *st, true
}

func (f *workersFixture) pendingWake(uid types.UID) int {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	return len(f.w.pods[uid].notify)
}

func (f *workersFixture) waitGone(t *testing.T, uid types.UID) {
	t.Helper()
	polltest.True(t, 5*time.Second, fmt.Sprintf("the worker of %s to end", uid), func() bool {
		return !slices.Contains(f.w.Known(), uid)
	})
}

func int64p(v int64) *int64 { return &v }

func version(p *v1.Pod, v string) *v1.Pod {
	cp := p.DeepCopy()
	cp.ResourceVersion = v
	return cp
}

func TestWorkersCreateRunsSyncPod(t *testing.T) {
	f := newWorkers(t, 0)
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	calls := f.syncer.waitCalls(t, 1)
	c := calls[0]
	if c.kind != kindSync || c.pod != pod {
		t.Errorf("first call = %s of %v, want sync of the created pod", c.kind, c.pod.Name)
	}
	if c.status == nil || c.status.ID != pod.UID {
		t.Errorf("status handed to SyncPod = %+v, want the cache's (empty) status of %s", c.status, pod.UID)
	}
	if got := f.w.Known(); !slices.Equal(got, []types.UID{pod.UID}) {
		t.Errorf("Known = %v", got)
	}
	if f.w.IsTerminating(pod.UID) {
		t.Error("IsTerminating of a syncing pod")
	}
}

func TestWorkersIgnoreUnknownPodsWithoutSpec(t *testing.T) {
	f := newWorkers(t, 0)
	for _, opts := range []UpdatePodOptions{
		{Type: Sync, UID: "nope"},
		{Type: Kill, UID: "nope"},
		{Type: Sync},
	} {
		f.w.UpdatePod(f.ctx, opts)
	}
	if got := f.w.Known(); len(got) != 0 {
		t.Errorf("Known = %v, want none", got)
	}
}

func TestWorkersNoOverlapAndCoalesce(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(1, 2)
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		return SyncResult{}, g.wait(ctx, c.n)
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, version(pod, "1"))
	f.syncer.waitCalls(t, 1)

	// While the first sync runs, a burst of updates and syncs from many
	// goroutines, then one last update.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: Sync, UID: pod.UID})
		}()
		go func() {
			defer wg.Done()
			f.update(Update, version(pod, fmt.Sprint(100+i)))
		}()
	}
	wg.Wait()
	f.update(Update, version(pod, "last"))

	g.open(1)
	calls := f.syncer.waitCalls(t, 2)
	// The burst collapsed into one sync, of the newest version, and no
	// further wake-up is pending while it runs.
	if got := calls[1].pod.ResourceVersion; got != "last" {
		t.Errorf("second sync of version %q, want last", got)
	}
	if n := f.pendingWake(pod.UID); n != 0 {
		t.Errorf("%d wake-ups pending during the second sync, want 0", n)
	}
	g.open(2)
	f.syncer.waitDone(t, 2)
	if got := f.syncer.kinds(); len(got) != 2 {
		t.Errorf("calls = %v, want 2 syncs", got)
	}
	f.syncer.checkNoOverlap(t)
}

func TestWorkersManyPodsNeverOverlap(t *testing.T) {
	f := newWorkers(t, 0)
	var pods []*v1.Pod
	for i := range 10 {
		pods = append(pods, newPod(fmt.Sprintf("p%d", i), []string{"app"}))
	}
	var wg sync.WaitGroup
	for _, p := range pods {
		f.update(Create, p)
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 50 {
					switch (i + j) % 3 {
					case 0:
						f.update(Update, version(p, fmt.Sprint(j)))
					case 1:
						f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: Sync, UID: p.UID})
					default:
						f.w.ResyncDue()
					}
				}
			}()
		}
	}
	wg.Wait()
	// Every pod gets synced at least once; none is synced twice at once.
	polltest.True(t, 5*time.Second, "every pod synced", func() bool {
		calls, _ := f.syncer.snapshot()
		seen := map[types.UID]bool{}
		for _, c := range calls {
			seen[c.uid] = true
		}
		return len(seen) == len(pods)
	})
	f.syncer.checkNoOverlap(t)
}

func TestWorkersKillLifecycle(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(3)
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		return SyncResult{}, g.wait(ctx, c.n)
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	f.syncer.waitDone(t, 1)

	f.kill(pod, int64p(5))
	calls := f.syncer.waitCalls(t, 3)
	if !f.w.IsTerminating(pod.UID) {
		t.Error("IsTerminating = false while the terminated sync runs")
	}
	if got := slices.Clone(f.w.Known()); !slices.Equal(got, []types.UID{pod.UID}) {
		t.Errorf("Known while terminating = %v", got)
	}
	g.open(3)
	f.waitGone(t, pod.UID)
	if got, want := f.syncer.kinds(), []string{"sync", "terminating(5)", "terminated"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if calls[1].pod != pod || calls[2].pod != pod {
		t.Error("termination calls did not get the pod")
	}
	if f.w.IsTerminating(pod.UID) {
		t.Error("IsTerminating of a pod that is gone")
	}

	// Once gone, a bare sync request starts nothing.
	f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: Sync, UID: pod.UID})
	if got := f.w.Known(); len(got) != 0 {
		t.Errorf("Known after a sync request for a gone pod = %v", got)
	}
}

func TestWorkersKillGracePeriod(t *testing.T) {
	tests := []struct {
		name     string
		spec     *int64
		deletion *int64
		override *int64
		want     int64
	}{
		{"default", nil, nil, nil, 30},
		{"spec", int64p(60), nil, nil, 60},
		{"smaller override", int64p(60), nil, int64p(10), 10},
		{"larger override ignored", int64p(60), nil, int64p(90), 60},
		{"deletion grace smaller", int64p(60), int64p(15), nil, 15},
		{"deletion grace larger ignored", int64p(10), int64p(15), nil, 10},
		{"negative override is zero", nil, nil, int64p(-1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWorkers(t, 0)
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = tt.spec
				p.DeletionGracePeriodSeconds = tt.deletion
			})
			// A pod killed before its first sync is terminated straight
			// away.
			f.kill(pod, tt.override)
			f.waitGone(t, pod.UID)
			want := []string{fmt.Sprintf("terminating(%d)", tt.want), "terminated"}
			if got := f.syncer.kinds(); !slices.Equal(got, want) {
				t.Errorf("calls = %v, want %v", got, want)
			}
		})
	}
}

func TestWorkersKillCancelsSync(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(1)
	var syncErr error
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		err := g.wait(ctx, c.n)
		if c.n == 1 {
			syncErr = err
		}
		return SyncResult{}, err
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	f.syncer.waitCalls(t, 1)
	f.kill(pod, nil)
	f.waitGone(t, pod.UID)
	if !errors.Is(syncErr, context.Canceled) {
		t.Errorf("in-flight SyncPod ended with %v, want it cancelled", syncErr)
	}
	if got, want := f.syncer.kinds(), []string{"sync", "terminating(30)", "terminated"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	f.syncer.checkNoOverlap(t)
}

func TestWorkersGracePeriodOnlyShrinks(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(2, 3)
	results := map[int]error{}
	var mu sync.Mutex
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		err := g.wait(ctx, c.n)
		mu.Lock()
		results[c.n] = err
		mu.Unlock()
		return SyncResult{}, err
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	f.syncer.waitDone(t, 1)

	f.kill(pod, nil) // the pod's 30s
	f.syncer.waitCalls(t, 2)
	f.kill(pod, int64p(5)) // shorter: the kill starts over with it
	f.syncer.waitCalls(t, 3)
	f.kill(pod, int64p(20)) // longer: ignored, the kill in flight goes on
	f.kill(pod, nil)
	if st, _ := f.state(pod.UID); st.gracePeriod != 5 {
		t.Errorf("grace period = %d after longer requests, want 5", st.gracePeriod)
	}
	g.open(3)
	f.waitGone(t, pod.UID)

	want := []string{"sync", "terminating(30)", "terminating(5)", "terminated"}
	if got := f.syncer.kinds(); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(results[2], context.Canceled) {
		t.Errorf("first terminating sync ended with %v, want cancelled", results[2])
	}
	if results[3] != nil {
		t.Errorf("second terminating sync ended with %v, want it to finish (a longer grace must not cancel it)", results[3])
	}
	f.syncer.checkNoOverlap(t)
}

func TestWorkersCreateWhileTerminatingRestarts(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(2)
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		return SyncResult{}, g.wait(ctx, c.n)
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, version(pod, "1"))
	f.syncer.waitDone(t, 1)
	f.kill(pod, nil)
	f.syncer.waitCalls(t, 2)

	f.update(Create, version(pod, "2"))
	if !f.w.IsTerminating(pod.UID) {
		t.Error("re-adding a terminating pod must not cut its termination short")
	}
	g.open(2)
	calls := f.syncer.waitCalls(t, 4)
	f.syncer.waitDone(t, 4)
	if got, want := f.syncer.kinds(), []string{"sync", "terminating(30)", "terminated", "sync"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if got := calls[3].pod.ResourceVersion; got != "2" {
		t.Errorf("restarted pod has version %q, want 2", got)
	}
	if f.w.IsTerminating(pod.UID) {
		t.Error("IsTerminating after the restart")
	}
	if got := f.w.Known(); !slices.Equal(got, []types.UID{pod.UID}) {
		t.Errorf("Known after the restart = %v", got)
	}
	if st, _ := f.state(pod.UID); !st.terminatingAt.IsZero() || !st.terminatedAt.IsZero() || st.restartRequested {
		t.Errorf("state after restart: terminatingAt=%v terminatedAt=%v restartRequested=%v", st.terminatingAt, st.terminatedAt, st.restartRequested)
	}

	// And it can be killed again, with a fresh grace period.
	f.kill(pod, int64p(3))
	f.waitGone(t, pod.UID)
	if got, want := f.syncer.kinds()[4:], []string{"terminating(3)", "terminated"}; !slices.Equal(got, want) {
		t.Errorf("second termination calls = %v, want %v", got, want)
	}
}

func TestWorkersKillAfterRecreateCancelsRestart(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(2)
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		return SyncResult{}, g.wait(ctx, c.n)
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	f.syncer.waitDone(t, 1)
	f.kill(pod, nil)
	f.syncer.waitCalls(t, 2)
	f.update(Create, pod)
	f.kill(pod, nil) // removed again before the termination ended
	g.open(2)
	f.waitGone(t, pod.UID)
	if got, want := f.syncer.kinds(), []string{"sync", "terminating(30)", "terminated"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

// The package doc draws the restart edge as "re-added (same UID)", and the
// kubelet restarts a terminating pod only on a create. An update (the agent
// sends one for any UPDATE op of its sources) of a pod being killed must
// not bring the pod back once it is terminated.
func TestWorkersUpdateWhileTerminatingDoesNotRestart(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(2)
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		return SyncResult{}, g.wait(ctx, c.n)
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, version(pod, "1"))
	f.syncer.waitDone(t, 1)
	f.kill(pod, nil)
	f.syncer.waitCalls(t, 2)
	f.update(Update, version(pod, "2"))
	g.open(2)
	f.syncer.waitCalls(t, 3)
	f.syncer.waitDone(t, 3)
	polltest.True(t, 5*time.Second, "the worker to settle", func() bool {
		// Either it is gone, or it synced the pod once more.
		calls, done := f.syncer.snapshot()
		return !slices.Contains(f.w.Known(), pod.UID) || (len(calls) == 4 && done == 4)
	})
	if got, want := f.syncer.kinds(), []string{"sync", "terminating(30)", "terminated"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v: an Update of a terminating pod restarted it", got, want)
	}
}

func TestWorkersRetryAfterError(t *testing.T) {
	f := newWorkers(t, 0)
	boom := errors.New("boom")
	f.syncer.setHook(func(_ context.Context, c syncCall) (SyncResult, error) {
		if c.n <= 2 {
			return SyncResult{}, boom
		}
		return SyncResult{}, nil
	})
	pod := newPod("web", []string{"app"})
	scheduled := func() {
		t.Helper()
		polltest.True(t, 5*time.Second, "a retry to be scheduled", func() bool {
			st, _ := f.state(pod.UID)
			return !st.nextSync.IsZero()
		})
	}
	notYet := func(step time.Duration, calls int) {
		t.Helper()
		f.clock.Step(step)
		f.w.ResyncDue()
		st, _ := f.state(pod.UID)
		if st.nextSync.IsZero() || f.pendingWake(pod.UID) != 0 {
			t.Errorf("%v after the failure: the retry fired early", f.clock.Since(t0))
		}
		if got := len(f.syncer.kinds()); got != calls {
			t.Errorf("%d calls, want %d", got, calls)
		}
	}
	due := func(step time.Duration, calls int) {
		t.Helper()
		f.clock.Step(step)
		f.w.ResyncDue()
		f.syncer.waitDone(t, calls)
	}

	f.update(Create, pod)
	f.syncer.waitDone(t, 1)
	scheduled()
	notYet(0, 1)
	notYet(249*time.Millisecond, 1)
	due(time.Millisecond, 2) // the first failure waits 250ms
	scheduled()
	notYet(499*time.Millisecond, 2)
	due(time.Millisecond, 3) // the second waits 500ms
	polltest.True(t, 5*time.Second, "the failure count to reset", func() bool {
		st, _ := f.state(pod.UID)
		return st.failures == 0
	})
	if got := len(f.syncer.kinds()); got != 3 {
		t.Errorf("%d calls, want 3", got)
	}
}

func TestErrorBackoff(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{1, 250 * time.Millisecond},
		{2, 500 * time.Millisecond},
		{3, time.Second},
		{6, 8 * time.Second},
		{7, 10 * time.Second},
		{1000, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := errorBackoff(tt.failures); got != tt.want {
			t.Errorf("errorBackoff(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
}

func TestWorkersRequeue(t *testing.T) {
	tests := []struct {
		name     string
		resync   time.Duration
		requeue  time.Duration
		earliest time.Duration
		latest   time.Duration
	}{
		{"RequeueAfter alone", 0, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"resync with jitter", 10 * time.Second, 0, 10 * time.Second, 15 * time.Second},
		{"RequeueAfter sooner than resync", time.Minute, 5 * time.Second, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWorkers(t, tt.resync)
			f.syncer.setHook(func(context.Context, syncCall) (SyncResult, error) {
				return SyncResult{RequeueAfter: tt.requeue}, nil
			})
			pod := newPod("web", []string{"app"})
			f.update(Create, pod)
			f.syncer.waitDone(t, 1)
			polltest.True(t, 5*time.Second, "the next sync to be scheduled", func() bool {
				st, _ := f.state(pod.UID)
				return !st.nextSync.IsZero()
			})
			st, _ := f.state(pod.UID)
			if d := st.nextSync.Sub(t0); d < tt.earliest || d > tt.latest {
				t.Errorf("next sync in %v, want within [%v, %v]", d, tt.earliest, tt.latest)
			}
			f.clock.SetTime(st.nextSync)
			f.w.ResyncDue()
			f.syncer.waitDone(t, 2)
		})
	}
}

func TestWorkersNoResyncWithoutInterval(t *testing.T) {
	f := newWorkers(t, 0)
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	f.syncer.waitDone(t, 1)
	f.clock.Step(24 * time.Hour)
	f.w.ResyncDue()
	if st, _ := f.state(pod.UID); !st.nextSync.IsZero() || f.pendingWake(pod.UID) != 0 {
		t.Errorf("a resync was scheduled without ResyncInterval or RequeueAfter: %v", st.nextSync)
	}
}

// recordingCache is the real pleg.Cache, with the minimum time of every
// GetNewerThan call recorded.
type recordingCache struct {
	*pleg.Cache
	mu   sync.Mutex
	mins []time.Time
}

func (c *recordingCache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*kubecontainer.PodStatus, error) {
	c.mu.Lock()
	c.mins = append(c.mins, minTime)
	c.mu.Unlock()
	return c.Cache.GetNewerThan(ctx, uid, minTime)
}

func (c *recordingCache) asked() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.mins)
}

func TestWorkersMinCacheTime(t *testing.T) {
	f := newWorkers(t, 0)
	rc := &recordingCache{Cache: f.cache}
	f.w = New(Config{Syncer: f.syncer, Cache: rc, Clock: f.clock})
	t2 := t0.Add(2 * time.Second)
	f.syncer.setHook(func(_ context.Context, c syncCall) (SyncResult, error) {
		if c.n == 1 {
			return SyncResult{StatusTime: t2}, nil
		}
		return SyncResult{}, nil
	})
	pod := newPod("web", []string{"app"})
	t1 := t0.Add(time.Second)
	f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: Create, Pod: pod, MinCacheTime: t1})
	polltest.True(t, 5*time.Second, "the worker to wait on the cache", func() bool { return len(rc.asked()) == 1 })
	if got := rc.asked()[0]; !got.Equal(t1) {
		t.Errorf("worker asked for an entry at least as new as %v, want %v", got, t1)
	}
	if calls, _ := f.syncer.snapshot(); len(calls) != 0 {
		t.Fatalf("SyncPod ran before the cache had an entry as new as MinCacheTime")
	}

	older := &kubecontainer.PodStatus{ID: pod.UID, TimeStamp: t0}
	fresh := &kubecontainer.PodStatus{ID: pod.UID, TimeStamp: t1}
	f.cache.Set(pod.UID, older, nil, t0)
	f.cache.Set(pod.UID, fresh, nil, t1)
	calls := f.syncer.waitCalls(t, 1)
	if calls[0].status != fresh {
		t.Errorf("SyncPod got status at %v, want the one at %v", calls[0].status.TimeStamp, t1)
	}
	f.syncer.waitDone(t, 1)

	// The next sync waits for an entry at least as new as the status the
	// last one saw, even without a MinCacheTime of its own.
	f.w.UpdatePod(f.ctx, UpdatePodOptions{Type: Sync, UID: pod.UID})
	polltest.True(t, 5*time.Second, "the second cache wait", func() bool { return len(rc.asked()) == 2 })
	if got := rc.asked()[1]; !got.Equal(t2) {
		t.Errorf("second sync asked for %v, want the first sync's StatusTime %v", got, t2)
	}
	f.cache.UpdateTime(t2)
	f.syncer.waitDone(t, 2)
}

// A re-added pod whose old objects cannot be removed (containerd keeping a
// task it cannot delete) starts again anyway, beside them, instead of
// waiting for a removal that never succeeds.
func TestWorkersRestartDespiteStuckRemoval(t *testing.T) {
	f := newWorkers(t, 0)
	stuck := errors.New("cannot delete running task: failed precondition")
	f.syncer.setHook(func(_ context.Context, c syncCall) (SyncResult, error) {
		if c.kind == "terminated" {
			return SyncResult{}, stuck
		}
		return SyncResult{}, nil
	})
	pod := newPod("web", []string{"app"})
	f.update(Create, version(pod, "1"))
	f.syncer.waitDone(t, 1)
	f.kill(pod, nil)
	f.syncer.waitDone(t, 3) // sync, terminating, terminated (failed)
	// Without a re-add the worker keeps trying to remove; with one, it
	// starts the pod again at once.
	f.update(Create, version(pod, "2"))
	// terminated is tried once more (and fails), then the pod starts.
	calls := f.syncer.waitCalls(t, 5)
	f.syncer.waitDone(t, 5)
	if got := f.syncer.kinds(); got[len(got)-1] != "sync" {
		t.Fatalf("calls = %v, want the re-added pod synced after the failed removal", got)
	}
	if got := calls[len(calls)-1].pod.ResourceVersion; got != "2" {
		t.Errorf("restarted pod has version %q, want 2", got)
	}
	if f.w.IsTerminating(pod.UID) {
		t.Error("still terminating after the restart")
	}
}

// While starts are held (the node shuts down), running pods keep syncing
// and can be killed, but nothing starts: no new pod, no sync of a pod that
// is gone, no restart of a pod re-added while it terminates. Releasing the
// hold lets a re-add start pods again.
func TestWorkersHoldStarts(t *testing.T) {
	f := newWorkers(t, 0)
	g := newGates(3)
	f.syncer.setHook(func(ctx context.Context, c syncCall) (SyncResult, error) {
		return SyncResult{}, g.wait(ctx, c.n)
	})
	web := newPod("web", []string{"app"})
	f.update(Create, web)
	f.syncer.waitDone(t, 1)
	if f.w.IsTerminated(web.UID) {
		t.Error("IsTerminated of a running pod")
	}

	f.w.HoldStarts(true)
	f.update(Sync, web)
	f.syncer.waitDone(t, 2) // a running pod keeps syncing
	for _, typ := range []UpdateType{Create, Update, Sync} {
		f.update(typ, newPod("new", []string{"app"}))
	}
	if got := f.w.Known(); !slices.Equal(got, []types.UID{web.UID}) {
		t.Errorf("Known after requests for a new pod while held = %v", got)
	}

	f.kill(web, int64p(4))
	f.syncer.waitCalls(t, 3) // terminating, held by gate 3
	if f.w.IsTerminated(web.UID) {
		t.Error("IsTerminated while the pod terminates")
	}
	f.update(Create, web) // re-added while terminating: not restarted
	g.open(3)
	f.waitGone(t, web.UID)
	if !f.w.IsTerminated(web.UID) {
		t.Error("IsTerminated = false for a pod that is gone")
	}
	f.update(Sync, web)
	if got := f.w.Known(); len(got) != 0 {
		t.Errorf("Known after a sync of a killed pod while held = %v", got)
	}
	if got, want := f.syncer.kinds(), []string{"sync", "sync", "terminating(4)", "terminated"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}

	// A kill still reaches a pod without a worker (an orphan) while held.
	orphan := newPod("orphan", []string{"app"})
	f.kill(orphan, nil)
	f.waitGone(t, orphan.UID)

	f.w.HoldStarts(false)
	f.update(Create, web)
	calls := f.syncer.waitCalls(t, 7)
	if got := calls[6]; got.kind != kindSync || got.uid != web.UID {
		t.Errorf("after the hold, call 7 = %s of %s, want a sync of %s", got.kind, got.uid, web.UID)
	}
}

func TestWorkersOnGone(t *testing.T) {
	f := newWorkers(t, 0)
	type gone struct {
		uid   types.UID
		known bool
	}
	calls := make(chan gone, 4)
	f.w.cfg.OnGone = func(uid types.UID) {
		calls <- gone{uid: uid, known: slices.Contains(f.w.Known(), uid)}
	}
	pod := newPod("web", []string{"app"})
	f.update(Create, pod)
	f.syncer.waitDone(t, 1)
	select {
	case c := <-calls:
		t.Fatalf("OnGone(%s) for a pod that runs", c.uid)
	default:
	}
	f.kill(pod, int64p(0))
	select {
	case c := <-calls:
		if c.uid != pod.UID || c.known {
			t.Errorf("OnGone(%s) with the worker still known: %v; want %s, forgotten", c.uid, c.known, pod.UID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pod was killed and removed, but OnGone was not called")
	}
	select {
	case c := <-calls:
		t.Errorf("OnGone(%s) called twice", c.uid)
	case <-time.After(50 * time.Millisecond):
	}
}
