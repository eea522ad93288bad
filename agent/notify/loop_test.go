package notify

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/podworkers"
)

// fakeNotifier hands every message to the test.
type fakeNotifier struct {
	watchdog time.Duration
	// msgs receives each message, its states joined by newlines; the
	// test reads it.
	msgs chan string
}

func (f *fakeNotifier) Notify(ctx context.Context, states ...string) error {
	f.msgs <- strings.Join(states, "\n")
	return nil
}

func (f *fakeNotifier) WatchdogInterval() time.Duration { return f.watchdog }

// expect waits for a message containing every one of want, skipping
// others, and returns the messages skipped.
func (f *fakeNotifier) expect(t *testing.T, want ...string) []string {
	t.Helper()
	var skipped []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-f.msgs:
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(m, w)
			}
			if ok {
				return skipped
			}
			skipped = append(skipped, m)
		case <-timeout:
			t.Fatalf("no message with %q; got %q", want, skipped)
		}
	}
}

// fakeAgent is how the agent is doing, as a test sets it.
type fakeAgent struct {
	mu                    sync.Mutex
	runtimeReady, started bool
	syncLoopErr, plegErr  error
}

func (f *fakeAgent) set(change func(*fakeAgent)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeAgent) RuntimeReady() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runtimeReady
}

func (f *fakeAgent) SyncLoopStarted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

func (f *fakeAgent) SyncLoopHealthy() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncLoopErr
}

func (f *fakeAgent) PLEGHealthy() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plegErr
}

var (
	errPLEGNotStarted = errors.New("pleg not started")
	errStalled        = errors.New("sync loop last turned 1m0s ago; threshold is 30s")
)

// nopSyncer syncs nothing.
type nopSyncer struct{}

func (nopSyncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{}, errors.New("image pull failed")
}

func (nopSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, grace int64) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{}, nil
}

func (nopSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{}, nil
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

// testLoop is a Loop, and the parts a test changes.
type testLoop struct {
	*Loop
	agent  *fakeAgent
	pods   *podmanager.Manager
	merger *podconfig.Merger
}

func newTestLoop(clk *testingclock.FakeClock, n notifier) testLoop {
	tl := testLoop{
		agent:  &fakeAgent{plegErr: errPLEGNotStarted},
		pods:   podmanager.New(),
		merger: podconfig.New([]string{sources.File}),
	}
	tl.Loop = New(Config{
		Notifier:        n,
		Clock:           clk,
		RuntimeEndpoint: "unix:///run/containerd/containerd.sock",
		Agent:           tl.agent,
		Sources:         tl.merger,
		Pods:            tl.pods,
		FirstSyncs:      NewFirstSyncs(),
	})
	return tl
}

// The agent reports its start step by step, READY=1 once every pod of its
// sources was synced once (a failed sync counts), then pings the watchdog
// every half timeout while the sync loop turns, and says STOPPING=1 at the
// end.
func TestNotifyLoopReportsStartReadyAndWatchdog(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	n := &fakeNotifier{watchdog: 2 * time.Second, msgs: make(chan string, 100)}
	a := newTestLoop(clk, n)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), testLogger(t)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	step := clk.Step

	n.expect(t, "STATUS=Waiting for the container runtime at unix:///run/containerd/containerd.sock")

	a.agent.set(func(f *fakeAgent) { f.runtimeReady, f.started = true, true })
	step(notifyPeriod)
	n.expect(t, "STATUS=Starting: pleg not started", "EXTEND_TIMEOUT_USEC=30000000")

	a.agent.set(func(f *fakeAgent) { f.plegErr = nil })
	step(extendStartPeriod)
	n.expect(t, "STATUS=Waiting for a first complete read of the pod sources", "EXTEND_TIMEOUT_USEC=30000000")

	// The file source reports two pods; the merge hands them on.
	in := make(chan sources.Update, 1)
	out := make(chan podconfig.PodUpdate, 10)
	go a.merger.Run(ctx, in, out)
	web, db := testPod("web"), testPod("db")
	in <- sources.Update{Source: sources.File, Pods: []*v1.Pod{web, db}}
	polltest.True(t, 5*time.Second, "the merge to see every source", a.merger.AllSourcesSeen)
	a.pods.Set(web)
	a.pods.Set(db)
	step(notifyPeriod)
	n.expect(t, "STATUS=Starting pods: 0 of 2 synced")

	syncer := a.cfg.FirstSyncs.Wrap(nopSyncer{})
	_, _ = syncer.SyncPod(ctx, web, nil)
	step(notifyPeriod)
	n.expect(t, "STATUS=Starting pods: 1 of 2 synced")
	// A sync cancelled before it returned does not count.
	cancelled, cancelSync := context.WithCancel(ctx)
	cancelSync()
	_, _ = syncer.SyncPod(cancelled, db, nil)
	_, _ = syncer.SyncPod(ctx, db, nil)
	step(notifyPeriod)
	skipped := n.expect(t, "READY=1", "STATUS=Running 2 pods")
	for _, m := range skipped {
		if strings.Contains(m, "READY=1") {
			t.Errorf("READY=1 sent early: %q", m)
		}
	}

	// Pings every second (half of 2s) while the loop turns.
	for range 3 {
		step(time.Second)
		n.expect(t, "WATCHDOG=1")
	}

	cancel()
	n.expect(t, "STOPPING=1")
	<-done
}

func TestWatchdogPingOnlyWhileSyncLoopTurns(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	n := &fakeNotifier{watchdog: time.Minute, msgs: make(chan string, 10)}
	a := newTestLoop(clk, n)
	st := &notifyState{pinging: true}
	ctx := context.Background()

	// Not started: no ping.
	a.agent.set(func(f *fakeAgent) { f.syncLoopErr = errors.New("sync loop not started") })
	a.pingWatchdog(ctx, testLogger(t), st)
	// Turning: ping.
	a.agent.set(func(f *fakeAgent) { f.syncLoopErr = nil })
	a.pingWatchdog(ctx, testLogger(t), st)
	// Stalled: no ping.
	a.agent.set(func(f *fakeAgent) { f.syncLoopErr = errStalled })
	a.pingWatchdog(ctx, testLogger(t), st)
	// Turning again: ping.
	a.agent.set(func(f *fakeAgent) { f.syncLoopErr = nil })
	a.pingWatchdog(ctx, testLogger(t), st)

	close(n.msgs)
	var got []string
	for m := range n.msgs {
		got = append(got, m)
	}
	if strings.Join(got, ",") != "WATCHDOG=1,WATCHDOG=1" {
		t.Errorf("messages %q, want two pings", got)
	}
}

func TestServiceStatus(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	tests := []struct {
		name    string
		setup   func(a testLoop)
		ready   bool
		want    string
		synced  bool
		running bool
	}{
		{
			name:  "runtime down",
			setup: func(a testLoop) {},
			want:  "Waiting for the container runtime at unix:///run/containerd/containerd.sock",
		},
		{
			name:  "runtime up, loop not yet started",
			setup: func(a testLoop) { a.agent.runtimeReady = true },
			want:  "Starting the sync loop",
		},
		{
			name: "loop stalled",
			setup: func(a testLoop) {
				a.agent.runtimeReady, a.agent.started, a.agent.syncLoopErr = true, true, errStalled
			},
			ready: true,
			want:  "Unhealthy: sync loop last turned 1m0s ago; threshold is 30s",
		},
		{
			name: "ready with one pod and no PLEG yet",
			setup: func(a testLoop) {
				a.agent.runtimeReady, a.agent.started = true, true
				a.pods.Set(testPod("web"))
			},
			ready:   true,
			want:    "Running 1 pod; PLEG unhealthy: pleg not started",
			synced:  true,
			running: true,
		},
		{
			name: "starting, PLEG not started",
			setup: func(a testLoop) {
				a.agent.runtimeReady, a.agent.started = true, true
			},
			want:    "Starting: pleg not started",
			running: true,
		},
		{
			name: "no pods, sources read",
			setup: func(a testLoop) {
				a.agent.runtimeReady, a.agent.started, a.agent.plegErr = true, true, nil
				in := make(chan sources.Update, 1)
				in <- sources.Update{Source: sources.File}
				close(in)
				a.merger.Run(context.Background(), in, make(chan podconfig.PodUpdate, 10))
			},
			want:    "Running 0 pods",
			synced:  true,
			running: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestLoop(clk, &fakeNotifier{})
			tt.setup(a)
			got, synced, running := a.serviceStatus(tt.ready)
			if got != tt.want || synced != tt.synced || running != tt.running {
				t.Errorf("serviceStatus = %q, %v, %v; want %q, %v, %v", got, synced, running, tt.want, tt.synced, tt.running)
			}
		})
	}
}

func testLogger(t *testing.T) klog.Logger {
	return ktesting.NewLogger(t, ktesting.NewConfig())
}
