package podworkers

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// sandboxWindow lets at most a few RunPodSandbox calls run at once; the
// others wait their turn, first come first served. Making a sandbox is
// mostly CPU and kernel work (a shim process, runc, the network
// namespace and CNI), which does not go faster for being asked for many
// times at once: on a 2-core VM with containerd 2.1, 50 bridge-network
// pods started by direct CRI calls took 18.5 to 20.0 s with every
// RunPodSandbox at once, and 17.0 to 17.7 s with 2 at a time, while the
// median pod was running after 8.7 to 9.2 s instead of 17.0 to 17.5 (110
// host-network pods: 44.9 to 45.7 s against 32.7 to 36.0, median 42 s
// against 17 to 18; 2026-12-07, docs/bench/sandbox-window-2026-12-07.txt,
// the sweep's first form). The pods a window holds back
// would have waited as long in the runtime, behind all the others.
//
// A call that has not returned after stuck gives its turn up (it runs on),
// so a hung sandbox (a CNI plugin that does not answer) delays the pods
// behind it by stuck at most, not by the runtime request timeout.
type sandboxWindow struct {
	turns chan struct{}
	stuck time.Duration
	clock clock.WithDelayedExecution
}

// newSandboxWindow returns a window of n calls; nil (no window) when n is
// not positive. A clk that cannot run a func later is replaced by the
// real clock.
func newSandboxWindow(n int, stuck time.Duration, clk clock.Clock) *sandboxWindow {
	if n <= 0 {
		return nil
	}
	later, ok := clk.(clock.WithDelayedExecution)
	if !ok {
		later = clock.RealClock{}
	}
	return &sandboxWindow{turns: make(chan struct{}, n), stuck: stuck, clock: later}
}

// enter waits for a turn, or for ctx to end (the pod is no longer to be
// started), and returns the func that gives the turn back when the call
// has returned. A nil window lets every call through at once.
func (w *sandboxWindow) enter(ctx context.Context) (leave func(), err error) {
	if w == nil {
		return func() {}, nil
	}
	select {
	case w.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	give := func() { once.Do(func() { <-w.turns }) }
	t := w.clock.AfterFunc(w.stuck, give)
	return func() {
		t.Stop()
		give()
	}, nil
}
