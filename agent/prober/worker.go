package prober

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/probe"
)

// worker runs one probe of one container. Its fields below the line are
// owned by its goroutine.
type worker struct {
	m    *Manager
	key  workerKey
	pod  *v1.Pod
	spec *v1.Probe
	// container is the probed container's spec (ports, for named ports).
	container *v1.Container
	// startupGated: liveness and readiness wait for the startup probe.
	startupGated bool
	// stop is closed (under m.mu) to end the worker.
	stop    chan struct{}
	stopped bool
	// wake has room for one pending wake-up; poke never blocks.
	wake chan struct{}

	// ---- owned by run ----
	containerID string
	// next is when the next probe is due.
	next time.Time
	// onHold: the container failed liveness or startup; no probe until it
	// is replaced.
	onHold bool
	// last and streak count consecutive equal outcomes.
	last   probe.Result
	streak int
}

func newWorker(m *Manager, k workerKey, pod *v1.Pod, c *v1.Container, spec *v1.Probe) *worker {
	return &worker{
		m:            m,
		key:          k,
		pod:          pod,
		spec:         spec,
		container:    c,
		startupGated: k.t != Startup && c.StartupProbe != nil,
		stop:         make(chan struct{}),
		wake:         make(chan struct{}, 1),
	}
}

// stopLocked ends the worker; m.mu is held.
func (w *worker) stopLocked() {
	if !w.stopped {
		w.stopped = true
		close(w.stop)
	}
	if ws := w.m.workers[w.key.uid]; ws[w.key] == w {
		delete(ws, w.key)
	}
}

// poke asks the worker to look at its pod's status again.
func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is pending; it will see the newest status
	}
}

func (w *worker) run(ctx context.Context) {
	defer func() {
		if w.containerID != "" {
			w.m.forgetResult(w.containerID, w.key.t)
		}
		if w.m.cfg.Forget != nil {
			w.m.cfg.Forget(w.pod, w.key.container, w.key.t)
		}
	}()
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		default:
		}
		wait, scheduled := w.step(ctx)
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if scheduled && wait <= 0 {
			continue // overdue already (a probe outlasted its period)
		}
		var due <-chan time.Time
		if scheduled {
			timer = w.m.cfg.Clock.NewTimer(wait)
			due = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-w.wake:
		case <-due:
		}
	}
}

// step looks at the container, probes it if a probe is due, and says how
// long to wait for the next one; scheduled is false when only a new status
// can make a probe due (the container does not run, is on hold, or waits
// for its startup probe).
func (w *worker) step(ctx context.Context) (wait time.Duration, scheduled bool) {
	now := w.m.cfg.Clock.Now()
	st, ok := w.m.podStatus(w.key.uid)
	cs := findStatus(st, w.key.container)
	if !ok || cs == nil || cs.State.Running == nil || cs.ContainerID == "" {
		w.forget()
		return 0, false
	}
	if id := runtimeID(cs.ContainerID); id != w.containerID {
		w.forget()
		w.containerID = id
		startedAt := cs.State.Running.StartedAt.Time
		w.next = startedAt.Add(time.Duration(w.spec.InitialDelaySeconds) * time.Second)
		if startedAt.Before(w.m.start) {
			// Running before the agent started: spread the first probes
			// of all such containers over a period.
			spread := now.Add(time.Duration(rand.Int64N(int64(w.period())))) //nolint:gosec // jitter, not a secret
			if spread.After(w.next) {
				w.next = spread
			}
		}
	}
	switch {
	case w.onHold:
		return 0, false
	case w.startupGated && w.m.result(w.containerID, Startup) != probe.Success:
		return 0, false // the status that says it started wakes us
	case w.key.t == Startup && w.m.result(w.containerID, Startup) == probe.Success:
		return 0, false // started: the startup probe is done
	case now.Before(w.next):
		return w.next.Sub(now), true
	}
	w.next = now.Add(w.period())
	w.record(ctx, w.probe(ctx, st))
	if w.onHold {
		return 0, false
	}
	return w.next.Sub(w.m.cfg.Clock.Now()), true
}

// forget drops what the worker knew of the container it probed.
func (w *worker) forget() {
	if w.containerID != "" {
		w.m.forgetResult(w.containerID, w.key.t)
	}
	w.containerID, w.onHold, w.last, w.streak = "", false, probe.Unknown, 0
}

func (w *worker) period() time.Duration {
	if w.spec.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(w.spec.PeriodSeconds) * time.Second
}

func (w *worker) timeout() time.Duration {
	if w.spec.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(w.spec.TimeoutSeconds) * time.Second
}

// record counts an outcome and, once it repeats its threshold, makes it
// the container's result, telling the syncLoop when that changes it.
func (w *worker) record(ctx context.Context, r probe.Result) {
	if r == probe.Unknown {
		return // the check was not made: it says nothing
	}
	if r == w.last {
		w.streak++
	} else {
		w.last, w.streak = r, 1
	}
	threshold := w.spec.FailureThreshold
	if r == probe.Success {
		threshold = w.spec.SuccessThreshold
	}
	if w.streak < int(max(threshold, 1)) {
		return
	}
	if w.m.setResult(w.containerID, w.key.t, r) {
		klog.FromContext(ctx).V(2).Info("Probe result changed", "containerID", w.containerID, "result", r)
		select {
		case w.m.cfg.Results <- Result{PodUID: w.key.uid, ContainerName: w.key.container, ContainerID: w.containerID, Type: w.key.t, Success: r == probe.Success}:
		case <-ctx.Done():
		case <-w.stop:
		}
	}
	if r == probe.Failure && w.key.t != Readiness {
		// The container is killed; probing it while it stops would only
		// race with the kill.
		w.onHold, w.streak = true, 0
	}
}

// findStatus returns the status of the container called name, regular or
// sidecar.
func findStatus(st v1.PodStatus, name string) *v1.ContainerStatus {
	for i := range st.ContainerStatuses {
		if st.ContainerStatuses[i].Name == name {
			return &st.ContainerStatuses[i]
		}
	}
	for i := range st.InitContainerStatuses {
		if st.InitContainerStatuses[i].Name == name {
			return &st.InitContainerStatuses[i]
		}
	}
	return nil
}
