package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// journal records, in order, what the fakes were asked to do.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, fmt.Sprintf(format, args...))
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// fakeLock is an inhibitor lock; closing it is recorded.
type fakeLock struct {
	j  *journal
	n  int
	mu sync.Mutex
	// closed counts Close calls.
	closed int
}

func (l *fakeLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed++
	l.j.add("release#%d", l.n)
	return nil
}

// fakeBus is one connection to a fake logind.
type fakeBus struct {
	j *journal
	// locks counts the locks of every connection to this logind.
	locks *int

	mu sync.Mutex
	// delay is InhibitDelayMaxUSec; after a reload it becomes
	// delayAfterReload when that is set.
	delay            time.Duration
	delayAfterReload time.Duration
	reloadErr        error
	inhibitErr       error
	preparing        bool
	// signals carries PrepareForShutdown values; lost, once closed,
	// ends the connection.
	signals chan bool
	lost    chan struct{}
	closed  bool
}

var _ logind = (*fakeBus)(nil)

func newFakeBus(j *journal, locks *int) *fakeBus {
	return &fakeBus{j: j, locks: locks, delay: time.Minute, signals: make(chan bool), lost: make(chan struct{})}
}

func (b *fakeBus) InhibitDelayMax(context.Context) (time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.delay, nil
}

func (b *fakeBus) PreparingForShutdown(context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.preparing, nil
}

func (b *fakeBus) Inhibit(_ context.Context, what, who, why, mode string) (io.Closer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inhibitErr != nil {
		return nil, b.inhibitErr
	}
	if what != "shutdown" || who != "minikubelet" || mode != "delay" || why == "" {
		return nil, fmt.Errorf("unexpected inhibitor %q %q %q %q", what, who, why, mode)
	}
	*b.locks++
	b.j.add("inhibit#%d", *b.locks)
	return &fakeLock{j: b.j, n: *b.locks}, nil
}

func (b *fakeBus) ReloadLogind(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.j.add("reload")
	if b.reloadErr != nil {
		return b.reloadErr
	}
	if b.delayAfterReload > 0 {
		b.delay = b.delayAfterReload
	}
	return nil
}

func (b *fakeBus) NextPrepareForShutdown(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-b.lost:
		return false, errConnectionLost
	case v := <-b.signals:
		return v, nil
	}
}

func (b *fakeBus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// fakeNode is the node's pods; a pod stops when the test says so.
type fakeNode struct {
	j *journal

	mu         sync.Mutex
	pods       []*v1.Pod
	kills      []Kill
	terminated map[types.UID]bool
}

var _ node = (*fakeNode)(nil)

func (n *fakeNode) StopAdmitting(context.Context) ([]*v1.Pod, error) {
	n.j.add("stop-admitting")
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.pods), nil
}

func (n *fakeNode) TerminatePods(_ context.Context, kills []Kill) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, k := range kills {
		n.j.add("kill %s(%d)", k.Pod.Name, k.GracePeriod)
		n.kills = append(n.kills, k)
	}
	return nil
}

func (n *fakeNode) Terminated(uid types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.terminated[uid]
}

func (n *fakeNode) Resume(context.Context) error {
	n.j.add("resume")
	return nil
}

func (n *fakeNode) stop(names ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, name := range names {
		n.terminated[types.UID("uid-"+name)] = true
	}
}

type fixture struct {
	t     *testing.T
	j     *journal
	clock *testingclock.FakeClock
	node  *fakeNode
	// buses are handed out by dial, one per connection; dialErr, when
	// set, fails a dial instead.
	mu      sync.Mutex
	buses   []*fakeBus
	dialed  int
	dialErr error
	locks   int
	m       *Manager
	cancel  context.CancelFunc
	done    chan struct{}
}

func newFixture(t *testing.T, grace, critical time.Duration, pods ...*v1.Pod) *fixture {
	t.Helper()
	f := &fixture{t: t, j: &journal{}, clock: testingclock.NewFakeClock(t0)}
	f.node = &fakeNode{j: f.j, pods: pods, terminated: map[types.UID]bool{}}
	f.m = newManager(Config{
		GracePeriod:             grace,
		CriticalPodsGracePeriod: critical,
		Node:                    f.node,
		LogindConfDir:           filepath.Join(t.TempDir(), "logind.conf.d"),
		Clock:                   f.clock,
	}, f.dial)
	return f
}

// bus adds the fake logind connection the next dial returns.
func (f *fixture) bus() *fakeBus {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := newFakeBus(f.j, &f.locks)
	f.buses = append(f.buses, b)
	return b
}

func (f *fixture) dial(context.Context) (logind, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dialErr != nil {
		f.j.add("dial failed")
		return nil, f.dialErr
	}
	if f.dialed >= len(f.buses) {
		return nil, errors.New("no bus")
	}
	f.dialed++
	return f.buses[f.dialed-1], nil
}

func (f *fixture) run() {
	_, ctx := ktesting.NewTestContext(f.t)
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		f.m.Run(ctx)
	}()
	f.t.Cleanup(f.stop)
}

// stop cancels Run and waits for it to return.
func (f *fixture) stop() {
	f.cancel()
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		f.t.Fatal("Run did not return after cancel")
	}
}

// waitJournal waits until the journal ends with want.
func (f *fixture) waitJournal(want ...string) {
	f.t.Helper()
	polltest.Until(f.t, 5*time.Second, fmt.Sprintf("journal ending with %q", want), func() (bool, string) {
		got := f.j.get()
		return len(got) >= len(want) && slices.Equal(got[len(got)-len(want):], want), fmt.Sprintf("%q", got)
	})
}

// waitClock waits until the manager waits on the clock: it waits on one
// timer at a time.
func (f *fixture) waitClock() {
	f.t.Helper()
	polltest.Until(f.t, 5*time.Second, "the manager to wait on the clock", func() (bool, string) {
		n := f.clock.Waiters()
		return n == 1, fmt.Sprintf("%d waiters", n)
	})
}

// step moves the fake clock once the manager waits on it.
func (f *fixture) step(d time.Duration) {
	f.t.Helper()
	f.waitClock()
	f.clock.Step(d)
}

func pod(name string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func grace(s int64) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

func priorityClass(name string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.PriorityClassName = name }
}

func priority(v int32) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Priority = &v }
}

// A shutdown terminates regular pods, then critical ones, each group within
// its period, marks them, and only then releases the lock; a cancellation
// takes the lock again and starts the pods again.
func TestManagerShutdownAndCancel(t *testing.T) {
	f := newFixture(t, 20*time.Second, 5*time.Second,
		pod("app", grace(30)),
		pod("short", grace(3)),
		pod("node-agent", priorityClass("system-node-critical")),
		pod("dns", priority(2000001000), grace(2)),
	)
	bus := f.bus()
	f.run()
	f.waitJournal("inhibit#1")

	bus.signals <- true
	f.waitJournal("stop-admitting", "kill app(15)", "kill short(3)")
	// The regular group is still running: nothing more happens.
	f.step(pollInterval)
	f.waitClock()
	f.node.stop("app", "short")
	f.step(pollInterval)
	f.waitJournal("kill node-agent(5)", "kill dns(2)")
	f.waitClock()
	f.node.stop("node-agent", "dns")
	f.step(pollInterval)
	f.waitJournal("release#1")
	if got := f.clock.Since(t0); got != 3*pollInterval {
		t.Errorf("the lock was released %v after the signal, want as soon as the pods stopped (%v)", got, 3*pollInterval)
	}
	f.node.mu.Lock()
	for _, k := range f.node.kills {
		if k.Reason != "Terminated" || k.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("kill of %s: reason %q message %q", k.Pod.Name, k.Reason, k.Message)
		}
	}
	f.node.mu.Unlock()

	// Again: nothing is left to do. Then the shutdown is cancelled.
	bus.signals <- true
	bus.signals <- false
	f.waitJournal("inhibit#2", "resume")
	bus.signals <- false // no shutdown under way: nothing to undo
	f.stop()
	want := []string{
		"inhibit#1", "stop-admitting", "kill app(15)", "kill short(3)", "kill node-agent(5)", "kill dns(2)", "release#1",
		"inhibit#2", "resume", "release#2",
	}
	if got := f.j.get(); !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
}

// A group whose pods do not stop in time does not hold up the next one,
// nor the release of the lock beyond the grace period.
func TestManagerGroupTimeout(t *testing.T) {
	tests := []struct {
		name     string
		pods     []*v1.Pod
		critical time.Duration
		// steps are the clock steps until the release, after the signal.
		steps []time.Duration
		want  []string
	}{
		{
			name:     "both groups time out",
			pods:     []*v1.Pod{pod("app"), pod("crit", priorityClass("system-cluster-critical"))},
			critical: 5 * time.Second,
			steps:    []time.Duration{15 * time.Second, 5 * time.Second},
			want:     []string{"stop-admitting", "kill app(15)", "kill crit(5)", "release#1"},
		},
		{
			name:     "no critical pods: no wait for them",
			pods:     []*v1.Pod{pod("app")},
			critical: 5 * time.Second,
			steps:    []time.Duration{15 * time.Second},
			want:     []string{"stop-admitting", "kill app(15)", "release#1"},
		},
		{
			name:     "no regular pods",
			pods:     []*v1.Pod{pod("crit", priorityClass("system-node-critical"))},
			critical: 5 * time.Second,
			steps:    []time.Duration{5 * time.Second},
			want:     []string{"stop-admitting", "kill crit(5)", "release#1"},
		},
		{
			name:     "no critical period: critical pods get no grace",
			pods:     []*v1.Pod{pod("app"), pod("crit", priorityClass("system-node-critical"))},
			critical: 0,
			steps:    []time.Duration{20 * time.Second},
			want:     []string{"stop-admitting", "kill app(20)", "kill crit(0)", "release#1"},
		},
		{
			name:  "no pods",
			steps: nil,
			want:  []string{"stop-admitting", "release#1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 20*time.Second, tt.critical, tt.pods...)
			bus := f.bus()
			f.run()
			f.waitJournal("inhibit#1")
			bus.signals <- true
			for _, d := range tt.steps {
				f.step(d)
			}
			f.waitJournal(tt.want...)
		})
	}
}

// logind's InhibitDelayMaxSec is raised with a drop-in and a reload when it
// is shorter than the grace period; when that fails the manager says so and
// goes on with the lock.
func TestManagerRaisesInhibitDelay(t *testing.T) {
	tests := []struct {
		name        string
		delay       time.Duration
		afterReload time.Duration
		reloadErr   error
		// steps wait out the reload before the lock.
		steps       []time.Duration
		wantJournal []string
		wantDropIn  string
	}{
		{
			name:        "long enough",
			delay:       30 * time.Second,
			wantJournal: []string{"inhibit#1"},
		},
		{
			name:        "raised",
			delay:       5 * time.Second,
			afterReload: 21 * time.Second,
			wantJournal: []string{"reload", "inhibit#1"},
			wantDropIn:  "InhibitDelayMaxSec=21\n",
		},
		{
			name:        "reload has no effect",
			delay:       5 * time.Second,
			steps:       []time.Duration{reloadWait},
			wantJournal: []string{"reload", "inhibit#1"},
			wantDropIn:  "InhibitDelayMaxSec=21\n",
		},
		{
			name:        "reload fails",
			delay:       5 * time.Second,
			reloadErr:   errors.New("no systemd"),
			wantJournal: []string{"reload", "inhibit#1"},
			wantDropIn:  "InhibitDelayMaxSec=21\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 20*time.Second+time.Millisecond, 0)
			bus := f.bus()
			bus.delay, bus.delayAfterReload, bus.reloadErr = tt.delay, tt.afterReload, tt.reloadErr
			f.run()
			for _, d := range tt.steps {
				f.step(d)
			}
			f.waitJournal(tt.wantJournal...)
			if got := f.j.get(); !slices.Equal(got, tt.wantJournal) {
				t.Errorf("journal = %q, want %q", got, tt.wantJournal)
			}
			b, err := os.ReadFile(filepath.Join(f.m.cfg.LogindConfDir, "99-minikubelet.conf"))
			switch {
			case tt.wantDropIn == "" && !os.IsNotExist(err):
				t.Errorf("drop-in written (%v): %q", err, b)
			case tt.wantDropIn != "" && (err != nil || !strings.Contains(string(b), "[Login]\n"+tt.wantDropIn)):
				t.Errorf("drop-in = %q (%v), want [Login] %q", b, err, tt.wantDropIn)
			}
		})
	}
}

// When logind cannot be reached at start, Run gives up at once: the agent
// runs on without graceful shutdown.
func TestManagerUnreachableAtStart(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture)
	}{
		{"no bus", func(f *fixture) { f.dialErr = errors.New("no such file or directory") }},
		{"no lock", func(f *fixture) { f.bus().inhibitErr = errors.New("org.freedesktop.DBus.Error.ServiceUnknown") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 20*time.Second, 0)
			tt.setup(f)
			f.run()
			select {
			case <-f.done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
			for _, b := range f.buses {
				if !b.closed {
					t.Error("the connection was not closed")
				}
			}
		})
	}
}

// A lost connection is dialled again with back-off; the new connection
// takes a new lock before the old one is released, and a shutdown logind
// started meanwhile is acted on at once.
func TestManagerReconnects(t *testing.T) {
	f := newFixture(t, 20*time.Second, 5*time.Second, pod("app"))
	first := f.bus()
	f.run()
	f.waitJournal("inhibit#1")

	f.mu.Lock()
	f.dialErr = errors.New("connection refused")
	f.mu.Unlock()
	close(first.lost)
	f.step(reconnectInitial)
	f.waitJournal("dial failed")
	f.step(2 * reconnectInitial)
	f.waitJournal("dial failed", "dial failed")
	if !first.closed {
		t.Error("the lost connection was not closed")
	}

	second := f.bus()
	second.preparing = true
	f.mu.Lock()
	f.dialErr = nil
	f.mu.Unlock()
	f.step(4 * reconnectInitial)
	f.waitJournal("inhibit#2", "release#1", "stop-admitting", "kill app(15)")
	f.waitClock()
	f.node.stop("app")
	f.step(pollInterval)
	f.waitJournal("release#2")

	// Lost again while the node shuts down: no lock is taken on the
	// reconnect, and a cancellation missed meanwhile starts the pods.
	third := f.bus()
	close(second.lost)
	f.step(reconnectInitial)
	f.waitJournal("inhibit#3", "resume")
	third.signals <- true
	f.waitJournal("stop-admitting", "kill app(15)", "release#3")
}
