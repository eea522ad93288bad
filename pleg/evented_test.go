package pleg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

// fakeEventRuntime is a FakeRuntimeService with a scriptable
// GetContainerEvents. It counts relists (ListPodSandbox without a filter)
// and notes any overlap of Lister calls: Evented must make them all from
// Run's goroutine, one at a time, but for the two list calls of one pod's
// status read, which kubecontainer.RefreshPodStatus makes together.
type fakeEventRuntime struct {
	*critest.FakeRuntimeService
	clock *testingclock.FakeClock

	mu sync.Mutex
	// script says how the next GetContainerEvents calls go; once it is
	// used up, a call brings a stream up and serves it.
	script  []fakeAttempt
	streams []*fakeStream
	relists int
	listErr error

	// inFlight counts the Lister calls in flight by kind (see enter).
	// Guarded by flightMu.
	flightMu sync.Mutex
	inFlight map[string]int
	overlap  atomic.Bool
}

var _ eventedRuntime = (*fakeEventRuntime)(nil)

// fakeAttempt scripts one GetContainerEvents call.
type fakeAttempt struct {
	// err ends the call: before the stream is up, or after it when afterUp
	// (as cri-client does for a runtime without events: the callback
	// comes first, the Unimplemented with the first Recv).
	err     error
	afterUp bool
	// flood, once the stream is up, is sent again and again, with ctx
	// looked at only between sends, as cri-client does.
	flood *runtimeapi.ContainerEventResponse
}

// fakeStream is one GetContainerEvents call.
type fakeStream struct {
	// at is the fake clock's time of the call.
	at time.Time
	// push hands the call an event to send (unbuffered); end ends the call
	// with an error (buffer 1). The test writes both.
	push chan *runtimeapi.ContainerEventResponse
	end  chan error
	// done is closed when the call returns.
	done chan struct{}
}

func newFakeEventRuntime(clk *testingclock.FakeClock, script []fakeAttempt) *fakeEventRuntime {
	return &fakeEventRuntime{FakeRuntimeService: critest.NewFakeRuntimeService(), clock: clk, script: script}
}

func (f *fakeEventRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	s := &fakeStream{
		at:   f.clock.Now(),
		push: make(chan *runtimeapi.ContainerEventResponse),
		end:  make(chan error, 1),
		done: make(chan struct{}),
	}
	defer close(s.done)
	f.mu.Lock()
	f.streams = append(f.streams, s)
	var a fakeAttempt
	if len(f.script) > 0 {
		a, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()

	if a.err != nil && !a.afterUp {
		return a.err
	}
	cb(nil)
	if a.err != nil {
		return a.err
	}
	if a.flood != nil {
		for {
			ch <- a.flood
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case err := <-s.end:
			return err
		case ev := <-s.push:
			ch <- ev
		}
	}
}

// enter notes a Lister call of kind until the func it returns is called.
// A call overlaps when it starts while another is in flight, unless the
// two are a pod's filtered ListPodSandbox and ListContainers, made
// together by one status read.
func (f *fakeEventRuntime) enter(kind string) func() {
	f.flightMu.Lock()
	defer f.flightMu.Unlock()
	if f.inFlight == nil {
		f.inFlight = map[string]int{}
	}
	for k, n := range f.inFlight {
		together := k != kind && (k == "podSandboxes" || k == "podContainers") && (kind == "podSandboxes" || kind == "podContainers")
		if n > 0 && !together {
			f.overlap.Store(true)
		}
	}
	f.inFlight[kind]++
	return func() {
		f.flightMu.Lock()
		defer f.flightMu.Unlock()
		f.inFlight[kind]--
	}
}

func (f *fakeEventRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	kind := "podSandboxes"
	if filter == nil {
		kind = "relistSandboxes"
	}
	defer f.enter(kind)()
	if filter == nil {
		f.mu.Lock()
		f.relists++
		err := f.listErr
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return f.FakeRuntimeService.ListPodSandbox(ctx, filter)
}

func (f *fakeEventRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	defer f.enter("sandboxStatus")()
	return f.FakeRuntimeService.PodSandboxStatus(ctx, id, verbose)
}

func (f *fakeEventRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	kind := "podContainers"
	if filter == nil {
		kind = "relistContainers"
	}
	defer f.enter(kind)()
	return f.FakeRuntimeService.ListContainers(ctx, filter)
}

func (f *fakeEventRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	defer f.enter("containerStatus")()
	return f.FakeRuntimeService.ContainerStatus(ctx, id, verbose)
}

func (f *fakeEventRuntime) setListErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listErr = err
}

func (f *fakeEventRuntime) attemptTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, s := range f.streams {
		out = append(out, s.at)
	}
	return out
}

func (f *fakeEventRuntime) lastStream(t *testing.T) *fakeStream {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.streams) == 0 {
		t.Fatal("no GetContainerEvents call yet")
	}
	return f.streams[len(f.streams)-1]
}

type evOptions struct {
	capacity int
	script   []fakeAttempt
	// unbuffered gives the stream channel no buffer.
	unbuffered bool
	// relistPeriod is 1s when 0.
	relistPeriod time.Duration
}

type evFixture struct {
	rt       *fakeEventRuntime
	clock    *testingclock.FakeClock
	cache    *Cache
	g        *Generic
	e        *Evented
	connErrs atomic.Int32
	logs     ktesting.Underlier
	cancel   context.CancelFunc
	done     chan struct{}
}

// runEvented starts an Evented on a fake runtime and a fake clock at t0.
// The test's cleanup cancels it and checks that Run returns.
func runEvented(t *testing.T, o evOptions) *evFixture {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	f := &evFixture{
		rt:    newFakeEventRuntime(clk, o.script),
		clock: clk,
		cache: NewCache(),
		done:  make(chan struct{}),
	}
	if o.relistPeriod == 0 {
		o.relistPeriod = time.Second
	}
	f.g = NewGeneric(GenericConfig{
		Runtime:         f.rt,
		Cache:           f.cache,
		RelistPeriod:    o.relistPeriod,
		ChannelCapacity: o.capacity,
		Clock:           clk,
	})
	f.e = NewEvented(EventedConfig{
		Runtime:            f.rt,
		Cache:              f.cache,
		Relister:           f.g,
		SafetyRelistPeriod: time.Minute,
		RelistPeriod:       o.relistPeriod,
		Clock:              clk,
		OnConnectionError:  func() { f.connErrs.Add(1) },
	})
	if o.unbuffered {
		f.e.streamBuffer = 0
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	f.logs = logger.GetSink().(ktesting.Underlier)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	f.cancel = cancel
	go func() {
		defer close(f.done)
		f.e.Run(ctx)
	}()
	t.Cleanup(func() {
		f.cancel()
		select {
		case <-f.done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
		if f.rt.overlap.Load() {
			t.Error("runtime Lister calls overlapped: relists and events are not on one goroutine")
		}
	})
	return f
}

// evState is what a test waits for after each step of the fake clock.
type evState struct {
	relists, attempts, connErrs int
	// waiters counts armed timers: the relist timer, plus the reconnect
	// timer while one is pending.
	waiters int
	mode    string
}

func (f *evFixture) state() evState {
	f.rt.mu.Lock()
	defer f.rt.mu.Unlock()
	return evState{
		relists:  f.rt.relists,
		attempts: len(f.rt.streams),
		connErrs: int(f.connErrs.Load()),
		waiters:  f.clock.Waiters(),
		mode:     f.e.Mode(),
	}
}

// settle waits until the loop reached want.
func (f *evFixture) settle(t *testing.T, want evState) {
	t.Helper()
	polltest.Until(t, 5*time.Second, fmt.Sprintf("state %+v", want), func() (bool, string) {
		got := f.state()
		return got == want, fmt.Sprintf("at %v: %+v", f.clock.Since(t0), got)
	})
}

// upState is the state once the first stream is up: the relist at start
// and the one when the stream came up.
func upState() evState {
	return evState{relists: 2, attempts: 1, waiters: 1, mode: ModeEvented}
}

// stepTo moves the fake clock to t0+at and waits for want.
func (f *evFixture) stepTo(t *testing.T, at time.Duration, want evState) {
	t.Helper()
	f.clock.SetTime(t0.Add(at))
	f.settle(t, want)
}

// push sends resp on the current stream.
func (f *evFixture) push(t *testing.T, resp *runtimeapi.ContainerEventResponse) {
	t.Helper()
	select {
	case f.rt.lastStream(t).push <- resp:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not take the event")
	}
}

// next returns the next event on the Watch channel.
func (f *evFixture) next(t *testing.T) *Event {
	t.Helper()
	select {
	case e := <-f.e.Watch():
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

func (f *evFixture) logCount(substr string) int {
	n := 0
	for _, entry := range f.logs.GetBuffer().Data() {
		if strings.Contains(entry.Message, substr) {
			n++
		}
	}
	return n
}

func (f *evFixture) statusCalls() []string {
	var out []string
	for _, c := range f.rt.GetCalls() {
		if c == "PodSandboxStatus" || c == "ContainerStatus" {
			out = append(out, c)
		}
	}
	return out
}

func evSandbox(id string, uid types.UID, state runtimeapi.PodSandboxState, created time.Time, ip string) *runtimeapi.PodSandboxStatus {
	sb := &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "pod-" + string(uid), Namespace: "ns", Uid: string(uid)},
		State:     state,
		CreatedAt: created.UnixNano(),
		Labels:    map[string]string{},
	}
	if uid != "" {
		sb.Labels[kubecontainer.LabelPodUID] = string(uid)
	}
	if ip != "" {
		sb.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ip}
	}
	return sb
}

func evContainer(id string, uid types.UID, state runtimeapi.ContainerState, created time.Time) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: id},
		State:     state,
		CreatedAt: created.UnixNano(),
		Labels:    map[string]string{kubecontainer.LabelPodUID: string(uid)},
	}
}

func evEvent(typ runtimeapi.ContainerEventType, id string, at int64, sb *runtimeapi.PodSandboxStatus, cs ...*runtimeapi.ContainerStatus) *runtimeapi.ContainerEventResponse {
	return &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: typ,
		CreatedAt:          at,
		PodSandboxStatus:   sb,
		ContainersStatuses: cs,
	}
}

const (
	evCreated = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	evStarted = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	evStopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	evDeleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

func containerIDs(cs []*kubecontainer.ContainerStatus) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func sandboxIDs(ss []*runtimeapi.PodSandboxStatus) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Id)
	}
	return out
}

func TestEventedWatchIsTheRelistersChannel(t *testing.T) {
	f := runEvented(t, evOptions{})
	if f.e.Watch() != f.g.Watch() {
		t.Error("Watch is not the Relister's channel")
	}
}

func TestEventedUnimplemented(t *testing.T) {
	unimplemented := status.Error(codes.Unimplemented, "unknown method GetContainerEvents for service runtime.v1.RuntimeService")
	tests := []struct {
		name    string
		attempt fakeAttempt
		// relists done once the stream failed: the one at start, and the
		// one when the stream came up.
		relists int
	}{
		{"refused at once", fakeAttempt{err: unimplemented}, 1},
		{"refused after the callback, as cri-client does", fakeAttempt{err: unimplemented, afterUp: true}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runEvented(t, evOptions{script: []fakeAttempt{tt.attempt}})
			const msg = "does not serve container events"
			want := evState{relists: tt.relists, attempts: 1, waiters: 1, mode: ModeRelist}
			polltest.True(t, 5*time.Second, "the log line", func() bool { return f.logCount(msg) == 1 })
			f.settle(t, want)

			// Relists every RelistPeriod, and never subscribes again.
			for i := 1; i <= 130; i++ {
				want.relists++
				f.stepTo(t, time.Duration(i)*time.Second, want)
			}
			if n := f.logCount(msg); n != 1 {
				t.Errorf("logged %q %d times, want once", msg, n)
			}
			if err := f.e.Healthy(); err != nil {
				t.Errorf("Healthy = %v", err)
			}
		})
	}
}

func TestEventedEventUpdatesCache(t *testing.T) {
	at := t0.Add(5*time.Second + 123) // the event's time; the clock is at t0+10s
	tests := []struct {
		name      string
		typ       runtimeapi.ContainerEventType
		id        string
		createdAt int64
		// drop is the container, of the two the event lists (c1 running,
		// c2 exited), that the cache must not keep.
		drop     string
		wantType EventType
		wantTime time.Time
	}{
		{name: "started, nanoseconds", typ: evStarted, id: "c1", createdAt: at.UnixNano(), wantType: ContainerStarted, wantTime: at},
		{name: "stopped, seconds", typ: evStopped, id: "c2", createdAt: at.Unix(), wantType: ContainerDied, wantTime: at.Truncate(time.Second)},
		{name: "created", typ: evCreated, id: "c1", createdAt: at.UnixNano(), wantType: ContainerChanged, wantTime: at},
		{name: "deleted", typ: evDeleted, id: "c3", createdAt: at.UnixNano(), wantType: ContainerRemoved, wantTime: at},
		{name: "deleted, still listed", typ: evDeleted, id: "c2", createdAt: at.UnixNano(), drop: "c2", wantType: ContainerRemoved, wantTime: at},
		{name: "sandbox started", typ: evStarted, id: "sb1", createdAt: at.UnixNano(), wantType: ContainerStarted, wantTime: at},
		{name: "sandbox stopped, seconds", typ: evStopped, id: "sb1", createdAt: at.Unix(), wantType: ContainerDied, wantTime: at.Truncate(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runEvented(t, evOptions{})
			f.settle(t, upState())
			f.stepTo(t, 10*time.Second, upState())

			sb := evSandbox("sb1", "p", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "10.1.2.3")
			f.push(t, evEvent(tt.typ, tt.id, tt.createdAt, sb,
				evContainer("c1", "p", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(time.Second)),
				evContainer("c2", "p", runtimeapi.ContainerState_CONTAINER_EXITED, t0.Add(2*time.Second)),
			))
			e := f.next(t)
			if e.ID != "p" || e.Type != tt.wantType || e.Data != tt.id || !e.Time.Equal(tt.wantTime) {
				t.Errorf("event = %+v, want p/%s/%s at %v", e, tt.wantType, tt.id, tt.wantTime)
			}
			st, err := f.cache.Get("p")
			if err != nil {
				t.Fatalf("cache.Get: %v", err)
			}
			if !st.TimeStamp.Equal(tt.wantTime) {
				t.Errorf("cache entry at %v, want the event's %v", st.TimeStamp, tt.wantTime)
			}
			wantContainers := slices.DeleteFunc([]string{"c2", "c1"}, func(id string) bool { return id == tt.drop })
			if got := containerIDs(st.Containers); !slices.Equal(got, wantContainers) {
				t.Errorf("containers = %v, want %v (newest first)", got, wantContainers)
			}
			if got := sandboxIDs(st.Sandboxes); !slices.Equal(got, []string{"sb1"}) {
				t.Errorf("sandboxes = %v", got)
			}
			if st.Name != "pod-p" || st.Namespace != "ns" || !slices.Equal(st.IPs, []string{"10.1.2.3"}) {
				t.Errorf("name, namespace, IPs = %q, %q, %v", st.Name, st.Namespace, st.IPs)
			}
			for _, c := range st.Containers {
				if c.SandboxID != "sb1" {
					t.Errorf("container %s has sandbox %q", c.ID, c.SandboxID)
				}
			}
			if calls := f.statusCalls(); len(calls) != 0 {
				t.Errorf("status calls for an event that carries the statuses: %v", calls)
			}
		})
	}
}

func TestEventedOlderEventIsIgnored(t *testing.T) {
	for _, age := range []time.Duration{3 * time.Second, 0} {
		t.Run(fmt.Sprintf("older by %v", age), func(t *testing.T) {
			f := runEvented(t, evOptions{})
			f.settle(t, upState())
			f.stepTo(t, 10*time.Second, upState())
			cachedAt := t0.Add(8 * time.Second)
			cached := &kubecontainer.PodStatus{ID: "p", TimeStamp: cachedAt}
			f.cache.Set("p", cached, nil, cachedAt)

			sb := evSandbox("sb1", "p", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")
			f.push(t, evEvent(evStarted, "c1", cachedAt.Add(-age).UnixNano(), sb,
				evContainer("c1", "p", runtimeapi.ContainerState_CONTAINER_RUNNING, t0)))
			// Events are handled in order: once q's is out, p's was handled.
			sbq := evSandbox("sbq", "q", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")
			f.push(t, evEvent(evStarted, "sbq", t0.Add(6*time.Second).UnixNano(), sbq))
			if e := f.next(t); e.ID != "q" {
				t.Errorf("event = %+v; an event older than the cache entry was emitted", e)
			}
			if st, _ := f.cache.Get("p"); st != cached {
				t.Errorf("cache entry = %+v; the older event overwrote it", st)
			}
		})
	}
}

func TestEventedEventMergesIntoCache(t *testing.T) {
	f := runEvented(t, evOptions{})
	f.settle(t, upState())
	f.stepTo(t, 10*time.Second, upState())
	sbOld := evSandbox("sb-old", "p", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, t0.Add(-time.Hour), "")
	sb1 := evSandbox("sb1", "p", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "10.1.2.3")
	cached := &kubecontainer.PodStatus{
		ID: "p", Name: "pod-p", Namespace: "ns", IPs: []string{"10.1.2.3"},
		Sandboxes: []*runtimeapi.PodSandboxStatus{sb1, sbOld},
		Containers: []*kubecontainer.ContainerStatus{
			kubecontainer.FromCRIStatus(evContainer("c2", "p", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(2*time.Second)), "sb1"),
			kubecontainer.FromCRIStatus(evContainer("c1", "p", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(time.Second)), "sb1"),
			kubecontainer.FromCRIStatus(evContainer("c-old", "p", runtimeapi.ContainerState_CONTAINER_EXITED, t0.Add(-time.Hour)), "sb-old"),
		},
		TimeStamp: t0.Add(time.Second),
	}
	f.cache.Set("p", cached, nil, cached.TimeStamp)
	before := *cached
	before.Containers = slices.Clone(cached.Containers)

	// c1 stopped; c2 was removed meanwhile (its own event is yet to come).
	at := t0.Add(5 * time.Second)
	f.push(t, evEvent(evStopped, "c1", at.UnixNano(), sb1,
		evContainer("c1", "p", runtimeapi.ContainerState_CONTAINER_EXITED, t0.Add(time.Second))))
	if e := f.next(t); e.Type != ContainerDied || e.Data != "c1" || !e.Time.Equal(at) {
		t.Errorf("event = %+v", e)
	}
	st, _ := f.cache.Get("p")
	if got := containerIDs(st.Containers); !slices.Equal(got, []string{"c1", "c-old"}) {
		t.Errorf("containers = %v, want [c1 c-old]", got)
	}
	if c := st.FindContainer("c1"); c == nil || c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("c1 = %+v, want exited", c)
	}
	if got := sandboxIDs(st.Sandboxes); !slices.Equal(got, []string{"sb1", "sb-old"}) {
		t.Errorf("sandboxes = %v", got)
	}
	if !slices.Equal(cached.Containers, before.Containers) || !slices.Equal(cached.Sandboxes, before.Sandboxes) || !cached.TimeStamp.Equal(before.TimeStamp) {
		t.Error("the cached status was changed in place")
	}
}

func TestMergeEvent(t *testing.T) {
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	tOld, t1 := t0.Add(-100*time.Second), t0.Add(-50*time.Second)
	sbOld := evSandbox("sb-old", "p", notReady, tOld, "")
	sb1 := evSandbox("sb1", "p", ready, t1, "10.0.0.1")
	c1 := evContainer("c1", "p", running, t1.Add(time.Second))
	c2 := evContainer("c2", "p", running, t1.Add(2*time.Second))
	base := func() *kubecontainer.PodStatus {
		return &kubecontainer.PodStatus{
			ID: "p", Name: "pod-p", Namespace: "ns", IPs: []string{"10.0.0.1"},
			Sandboxes: []*runtimeapi.PodSandboxStatus{sb1, sbOld},
			Containers: []*kubecontainer.ContainerStatus{
				kubecontainer.FromCRIStatus(c2, "sb1"),
				kubecontainer.FromCRIStatus(c1, "sb1"),
				kubecontainer.FromCRIStatus(evContainer("c-old", "p", exited, tOld.Add(time.Second)), "sb-old"),
			},
			TimeStamp: t0.Add(-time.Second),
		}
	}
	tests := []struct {
		name           string
		old            *kubecontainer.PodStatus
		resp           *runtimeapi.ContainerEventResponse
		wantSandboxes  []string
		wantContainers []string
		wantIPs        []string
	}{
		{
			name:           "a container the event no longer lists is dropped; other sandboxes kept",
			old:            base(),
			resp:           evEvent(evStopped, "c1", 1, sb1, evContainer("c1", "p", exited, t1.Add(time.Second))),
			wantSandboxes:  []string{"sb1", "sb-old"},
			wantContainers: []string{"c1", "c-old"},
			wantIPs:        []string{"10.0.0.1"},
		},
		{
			name:           "a new container sorts first",
			old:            base(),
			resp:           evEvent(evCreated, "c3", 1, sb1, c1, c2, evContainer("c3", "p", runtimeapi.ContainerState_CONTAINER_CREATED, t0)),
			wantSandboxes:  []string{"sb1", "sb-old"},
			wantContainers: []string{"c3", "c2", "c1", "c-old"},
			wantIPs:        []string{"10.0.0.1"},
		},
		{
			name:           "a new sandbox sorts first and gives the IPs",
			old:            base(),
			resp:           evEvent(evStarted, "sb2", 1, evSandbox("sb2", "p", ready, t0, "10.0.0.2")),
			wantSandboxes:  []string{"sb2", "sb1", "sb-old"},
			wantContainers: []string{"c2", "c1", "c-old"},
			wantIPs:        []string{"10.0.0.2"},
		},
		{
			name:           "the newest sandbox stopped: no IPs",
			old:            base(),
			resp:           evEvent(evStopped, "sb1", 1, evSandbox("sb1", "p", notReady, t1, "10.0.0.1"), c1, c2),
			wantSandboxes:  []string{"sb1", "sb-old"},
			wantContainers: []string{"c2", "c1", "c-old"},
		},
		{
			name:           "a deleted sandbox goes with its containers",
			old:            base(),
			resp:           evEvent(evDeleted, "sb-old", 1, sbOld),
			wantSandboxes:  []string{"sb1"},
			wantContainers: []string{"c2", "c1"},
			wantIPs:        []string{"10.0.0.1"},
		},
		{
			name:           "a deleted container goes even if still listed",
			old:            base(),
			resp:           evEvent(evDeleted, "c2", 1, sb1, c1, c2),
			wantSandboxes:  []string{"sb1", "sb-old"},
			wantContainers: []string{"c1", "c-old"},
			wantIPs:        []string{"10.0.0.1"},
		},
		{
			name:           "no cached status",
			old:            nil,
			resp:           evEvent(evStarted, "c1", 1, sb1, c1),
			wantSandboxes:  []string{"sb1"},
			wantContainers: []string{"c1"},
			wantIPs:        []string{"10.0.0.1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before kubecontainer.PodStatus
			if tt.old != nil {
				before = *tt.old
				before.Sandboxes = slices.Clone(tt.old.Sandboxes)
				before.Containers = slices.Clone(tt.old.Containers)
			}
			st := mergeEvent(tt.old, "p", tt.resp, t0)
			if st.ID != "p" || !st.TimeStamp.Equal(t0) || st.Name != "pod-p" || st.Namespace != "ns" {
				t.Errorf("status = %+v", st)
			}
			if got := sandboxIDs(st.Sandboxes); !slices.Equal(got, tt.wantSandboxes) {
				t.Errorf("sandboxes = %v, want %v", got, tt.wantSandboxes)
			}
			if got := containerIDs(st.Containers); !slices.Equal(got, tt.wantContainers) {
				t.Errorf("containers = %v, want %v", got, tt.wantContainers)
			}
			if !slices.Equal(st.IPs, tt.wantIPs) {
				t.Errorf("IPs = %v, want %v", st.IPs, tt.wantIPs)
			}
			if tt.old != nil && (!slices.Equal(tt.old.Sandboxes, before.Sandboxes) || !slices.Equal(tt.old.Containers, before.Containers) ||
				!slices.Equal(tt.old.IPs, before.IPs) || !tt.old.TimeStamp.Equal(before.TimeStamp)) {
				t.Error("the old status was changed in place")
			}
		})
	}
}

// An event that does not carry what the cache needs makes Evented read the
// pod from the runtime, at a time taken before it asks.
func TestEventedIncompleteEventReadsRuntime(t *testing.T) {
	sb := evSandbox("sb1", "p", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")
	c1 := evContainer("c1", "p", runtimeapi.ContainerState_CONTAINER_RUNNING, t0)
	at := t0.Add(5 * time.Second).UnixNano()
	tests := []struct {
		name string
		resp *runtimeapi.ContainerEventResponse
	}{
		{"no sandbox status", evEvent(evStarted, "c1", at, nil, c1)},
		{"no time", evEvent(evStarted, "c1", 0, sb, c1)},
		{"time in the future", evEvent(evStarted, "c1", t0.Add(time.Hour).UnixNano(), sb, c1)},
		{"the event's container not listed", evEvent(evStarted, "c1", at, sb)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runEvented(t, evOptions{})
			f.settle(t, upState())
			f.rt.SetFakeSandboxes([]*critest.FakePodSandbox{{PodSandboxStatus: runtimeapi.PodSandboxStatus{
				Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-p", Namespace: "ns", Uid: "p"},
				State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.UnixNano(),
				Labels: map[string]string{kubecontainer.LabelPodUID: "p"},
			}}})
			f.rt.SetFakeContainers([]*critest.FakeContainer{{SandboxID: "sb1", ContainerStatus: runtimeapi.ContainerStatus{
				Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "c1"},
				State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: t0.UnixNano(),
				Labels: map[string]string{kubecontainer.LabelPodUID: "p"},
			}}})
			f.stepTo(t, 10*time.Second, upState())
			now := f.clock.Now()

			f.push(t, tt.resp)
			if e := f.next(t); e.ID != "p" || e.Type != ContainerStarted || e.Data != "c1" || !e.Time.Equal(now) {
				t.Errorf("event = %+v, want p/ContainerStarted/c1 at %v", e, now)
			}
			st, err := f.cache.Get("p")
			if err != nil || !st.TimeStamp.Equal(now) || len(st.Sandboxes) != 1 || !slices.Equal(containerIDs(st.Containers), []string{"c1"}) {
				t.Errorf("cache entry = %+v, %v; want the runtime's pod at %v", st, err, now)
			}
			if calls := f.statusCalls(); !slices.Contains(calls, "ContainerStatus") {
				t.Errorf("the runtime was not asked; status calls = %v", calls)
			}
		})
	}
}

func TestEventedEventsWithoutPod(t *testing.T) {
	f := runEvented(t, evOptions{})
	f.settle(t, upState())
	f.stepTo(t, 10*time.Second, upState())

	// Not a pod of ours (no pod UID label): ignored, as a relist ignores it.
	f.push(t, evEvent(evStarted, "sbx", t0.Add(5*time.Second).UnixNano(),
		evSandbox("sbx", "", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")))
	// Nothing to tell the pod by: the next relist comes within RelistPeriod
	// instead of SafetyRelistPeriod.
	f.push(t, evEvent(evDeleted, "c9", t0.Add(5*time.Second).UnixNano(), nil))
	// Events are handled in order: once q's is out, the others were handled.
	f.push(t, evEvent(evStarted, "sbq", t0.Add(6*time.Second).UnixNano(),
		evSandbox("sbq", "q", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")))
	if e := f.next(t); e.ID != "q" {
		t.Errorf("event = %+v, want q's only", e)
	}
	f.stepTo(t, 11*time.Second, evState{relists: 3, attempts: 1, waiters: 1, mode: ModeEvented})
	// Back to the safety period after that.
	f.stepTo(t, 70*time.Second, evState{relists: 3, attempts: 1, waiters: 1, mode: ModeEvented})
	f.stepTo(t, 71*time.Second, evState{relists: 4, attempts: 1, waiters: 1, mode: ModeEvented})
}

func TestEventedSafetyRelist(t *testing.T) {
	f := runEvented(t, evOptions{})
	f.settle(t, upState())
	want := upState()
	f.stepTo(t, 59*time.Second, want)
	for i := 1; i <= 3; i++ {
		want.relists++
		f.stepTo(t, time.Duration(i)*time.Minute, want)
	}
	if f.connErrs.Load() != 0 {
		t.Errorf("connection errors = %d", f.connErrs.Load())
	}
}

func TestEventedReconnectBackoff(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection refused")
	// A RelistPeriod of 700ms keeps relists off the reconnect times.
	f := runEvented(t, evOptions{relistPeriod: 700 * time.Millisecond, script: []fakeAttempt{{}, {err: unavailable}, {err: unavailable}}})
	f.settle(t, upState())
	ms := time.Millisecond
	relisting := func(relists, attempts, connErrs int) evState {
		return evState{relists: relists, attempts: attempts, connErrs: connErrs, waiters: 2, mode: ModeRelist}
	}
	evented := func(relists, attempts, connErrs int) evState {
		return evState{relists: relists, attempts: attempts, connErrs: connErrs, waiters: 1, mode: ModeEvented}
	}

	// The stream breaks: relist every RelistPeriod; reconnect after 250ms,
	// then 500ms, then 1s.
	f.rt.lastStream(t).end <- unavailable
	f.settle(t, relisting(2, 1, 1))
	f.stepTo(t, 249*ms, relisting(2, 1, 1))
	f.stepTo(t, 250*ms, relisting(2, 2, 2))
	f.stepTo(t, 700*ms, relisting(3, 2, 2))
	f.stepTo(t, 749*ms, relisting(3, 2, 2))
	f.stepTo(t, 750*ms, relisting(3, 3, 3))
	f.stepTo(t, 1400*ms, relisting(4, 3, 3))
	f.stepTo(t, 1749*ms, relisting(4, 3, 3))
	// Up again: relist at once.
	f.stepTo(t, 1750*ms, evented(5, 4, 3))

	// A stream that breaks at once does not start the delay over: 2s now.
	f.rt.lastStream(t).end <- unavailable
	f.settle(t, relisting(5, 4, 4))
	f.stepTo(t, 2450*ms, relisting(6, 4, 4))
	f.stepTo(t, 3150*ms, relisting(7, 4, 4))
	f.stepTo(t, 3749*ms, relisting(7, 4, 4))
	f.stepTo(t, 3750*ms, evented(8, 5, 4))

	// One that stayed up for 30s does: 250ms.
	f.stepTo(t, 33750*ms, evented(8, 5, 4))
	f.rt.lastStream(t).end <- unavailable
	f.settle(t, relisting(8, 5, 5))
	f.stepTo(t, 34000*ms, evented(9, 6, 5))

	want := []time.Duration{0, 250 * ms, 750 * ms, 1750 * ms, 3750 * ms, 34000 * ms}
	var got []time.Duration
	for _, at := range f.rt.attemptTimes() {
		got = append(got, at.Sub(t0))
	}
	if !slices.Equal(got, want) {
		t.Errorf("attempts at %v, want %v", got, want)
	}
}

func TestEventedFallback(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection refused")
	script := slices.Repeat([]fakeAttempt{{err: unavailable}}, 6)
	f := runEvented(t, evOptions{script: script})
	ms := time.Millisecond
	s := func(relists, attempts int) evState {
		return evState{relists: relists, attempts: attempts, connErrs: min(attempts, 6), waiters: 2, mode: ModeRelist}
	}

	// Four retries at 250ms, 500ms, 1s and 2s while relisting every second.
	f.settle(t, s(1, 1))
	f.stepTo(t, 250*ms, s(1, 2))
	f.stepTo(t, 750*ms, s(1, 3))
	f.stepTo(t, 1000*ms, s(2, 3))
	f.stepTo(t, 1750*ms, s(2, 4))
	f.stepTo(t, 2000*ms, s(3, 4))
	f.stepTo(t, 3000*ms, s(4, 4))
	f.stepTo(t, 3750*ms, s(4, 5)) // the 5th failure: fallen back
	polltest.True(t, 5*time.Second, "the fallback log line", func() bool { return f.logCount("failed repeatedly") == 1 })

	// Fallen back: relist every second, try the stream again after a minute.
	relists := 4
	for sec := 4; sec <= 63; sec++ {
		relists++
		f.stepTo(t, time.Duration(sec)*time.Second, s(relists, 5))
	}
	f.stepTo(t, 63750*ms, s(relists, 6)) // fails again: another minute
	for sec := 64; sec <= 123; sec++ {
		relists++
		f.stepTo(t, time.Duration(sec)*time.Second, s(relists, 6))
	}
	if err := f.e.Healthy(); err != nil {
		t.Errorf("Healthy while fallen back and relisting = %v", err)
	}
	f.stepTo(t, 123750*ms, evState{relists: relists + 1, attempts: 7, connErrs: 6, waiters: 1, mode: ModeEvented})
	if n := f.logCount("failed repeatedly"); n != 1 {
		t.Errorf("fallback logged %d times", n)
	}

	want := []time.Duration{0, 250 * ms, 750 * ms, 1750 * ms, 3750 * ms, 63750 * ms, 123750 * ms}
	var got []time.Duration
	for _, at := range f.rt.attemptTimes() {
		got = append(got, at.Sub(t0))
	}
	if !slices.Equal(got, want) {
		t.Errorf("attempts at %v, want %v", got, want)
	}
}

func TestEventedHealthy(t *testing.T) {
	t.Run("evented: a relist or an event within 10 minutes", func(t *testing.T) {
		f := runEvented(t, evOptions{})
		f.settle(t, upState())
		if err := f.e.Healthy(); err != nil {
			t.Fatalf("Healthy = %v", err)
		}
		f.rt.setListErr(errors.New("boom"))
		want := upState()
		for i := 1; i <= 10; i++ {
			want.relists++
			f.stepTo(t, time.Duration(i)*time.Minute, want)
		}
		if err := f.e.Healthy(); err != nil {
			t.Errorf("Healthy after exactly %v = %v", MaxEventedAge, err)
		}
		f.stepTo(t, 10*time.Minute+time.Second, want)
		err := f.e.Healthy()
		if err == nil || !strings.Contains(err.Error(), "10m1s") {
			t.Errorf("Healthy after 10m1s of failed relists = %v, want an error saying 10m1s", err)
		}
		f.push(t, evEvent(evStarted, "sb1", t0.Add(time.Minute).UnixNano(),
			evSandbox("sb1", "p", runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")))
		f.next(t)
		if err := f.e.Healthy(); err != nil {
			t.Errorf("Healthy right after an event = %v", err)
		}
	})
	t.Run("relisting: the Generic's 3 minutes", func(t *testing.T) {
		f := runEvented(t, evOptions{script: []fakeAttempt{{err: status.Error(codes.Unimplemented, "no")}}})
		want := evState{relists: 1, attempts: 1, waiters: 1, mode: ModeRelist}
		f.settle(t, want)
		f.rt.setListErr(errors.New("boom"))
		for sec := 1; sec <= 180; sec++ {
			want.relists++
			f.stepTo(t, time.Duration(sec)*time.Second, want)
		}
		if err := f.e.Healthy(); err != nil {
			t.Errorf("Healthy after exactly %v = %v", MaxRelistAge, err)
		}
		want.relists++
		f.stepTo(t, 181*time.Second, want)
		if err := f.e.Healthy(); err == nil {
			t.Error("Healthy after 3m1s of failed relists = nil")
		}
	})
	t.Run("saturated channel", func(t *testing.T) {
		f := runEvented(t, evOptions{capacity: 2})
		f.settle(t, upState())
		f.stepTo(t, 10*time.Second, upState())
		for _, uid := range []types.UID{"a", "b", "c"} {
			f.push(t, evEvent(evStarted, "sb-"+string(uid), t0.Add(5*time.Second).UnixNano(),
				evSandbox("sb-"+string(uid), uid, runtimeapi.PodSandboxState_SANDBOX_READY, t0, "")))
		}
		polltest.True(t, 5*time.Second, "a dropped event", func() bool { return f.e.Dropped() == 1 })
		err := f.e.Healthy()
		if err == nil || !strings.Contains(err.Error(), "saturated") {
			t.Errorf("Healthy with a full channel = %v, want an error saying saturated", err)
		}
		f.next(t)
		if err := f.e.Healthy(); err != nil {
			t.Errorf("Healthy with room again = %v", err)
		}
	})
	t.Run("before Run", func(t *testing.T) {
		e := NewEvented(EventedConfig{Runtime: newFakeEventRuntime(testingclock.NewFakeClock(t0), nil), Cache: NewCache(), Clock: testingclock.NewFakeClock(t0)})
		if err := e.Healthy(); err == nil {
			t.Error("Healthy before Run = nil")
		}
		if e.Mode() != ModeRelist {
			t.Errorf("Mode before Run = %q", e.Mode())
		}
	})
}

// Run returns, and the stream's goroutine ends, even while the runtime is
// blocked sending an event Run no longer reads (cri-client sends without
// looking at ctx).
func TestEventedRunEndsWhileRuntimeSends(t *testing.T) {
	flood := evEvent(evStarted, "sb1", t0.UnixNano(), evSandbox("sb1", "p", runtimeapi.PodSandboxState_SANDBOX_READY, t0, ""))
	f := runEvented(t, evOptions{unbuffered: true, script: []fakeAttempt{{flood: flood}}})
	f.next(t)
	stream := f.rt.lastStream(t)
	f.cancel()
	for _, ch := range []chan struct{}{f.done, stream.done} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Run or its stream did not end after cancel")
		}
	}
}

func TestEventTime(t *testing.T) {
	tests := []struct {
		in     int64
		want   time.Time
		wantOK bool
	}{
		{0, time.Time{}, false},
		{-1, time.Time{}, false},
		{t0.UnixNano(), t0, true},
		{t0.Unix(), t0, true},
		{999_999_999_999, time.Unix(999_999_999_999, 0), true},
		{1_000_000_000_000, time.Unix(0, 1_000_000_000_000), true},
	}
	for _, tt := range tests {
		got, ok := eventTime(tt.in)
		if ok != tt.wantOK || !got.Equal(tt.want) {
			t.Errorf("eventTime(%d) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}
