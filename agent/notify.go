package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/cleanup"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/sdnotify"
	"github.com/minikubelet/minikubelet/podworkers"
)

// The agent tells its service manager (systemd, Type=notify) how it is
// doing:
//
//	STATUS=Waiting for the container runtime at unix:///...
//	STATUS=Waiting for a first complete read of the pod sources
//	STATUS=Starting pods: 1 of 3 synced        (EXTEND_TIMEOUT_USEC while the sync loop turns)
//	READY=1 + STATUS=Running 3 pods            (the first full sync is done)
//	WATCHDOG=1 every half watchdog timeout     (only while the sync loop turns)
//	STOPPING=1                                 (ctx cancelled; pods keep running)
//
// The first full sync is done when the runtime has answered, the sync loop
// turns, the PLEG has listed the runtime, every configured source has sent
// a complete update, and every pod of the merged sources has been through
// one SyncPod of its worker (it returned, with or without an error: an
// image that cannot be pulled must not hold the agent's start forever). By
// then every sandbox and every container that could start at once was
// started. READY=1 is sent once.

// notifier is the service manager's side (internal/sdnotify.Notifier).
type notifier interface {
	// Notify sends states ("READY=1", "STATUS=...") as one message; it does
	// nothing when no manager listens. It must honour ctx's deadline.
	Notify(ctx context.Context, states ...string) error
	// WatchdogInterval is the manager's watchdog timeout, 0 for none.
	WatchdogInterval() time.Duration
}

var _ notifier = (*sdnotify.Notifier)(nil)

const (
	// notifyPeriod is how often the agent's state is checked for news for
	// the service manager.
	notifyPeriod = 500 * time.Millisecond
	// While starting, the start timeout (systemd's TimeoutStartSec) is
	// extended by extendStartBy every extendStartPeriod for as long as the
	// sync loop turns: a first sync that pulls big images may take longer
	// than the timeout and is no hang.
	extendStartPeriod = 10 * time.Second
	extendStartBy     = 30 * time.Second
)

// notifyState is what notifyLoop has told the manager so far.
type notifyState struct {
	ready      bool
	status     string
	lastExtend time.Time
	// pinging is false while watchdog pings are withheld.
	pinging bool
	// lastErr is the last Notify error logged, so that one is logged once.
	lastErr string
}

// notifyLoop keeps the service manager informed until ctx is done, then
// sends STOPPING=1. Started by Run; reads only what is safe to read from
// any goroutine.
func (a *Agent) notifyLoop(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("notify")
	st := &notifyState{pinging: true}
	tick := a.clock.NewTicker(notifyPeriod)
	defer tick.Stop()
	var watchdog <-chan time.Time
	if wd := a.notifier.WatchdogInterval(); wd > 0 {
		t := a.clock.NewTicker(wd / 2)
		defer t.Stop()
		watchdog = t.C()
		logger.Info("Service manager watchdog on", "timeout", wd, "pingEvery", wd/2)
	}
	for {
		a.notifyChanges(ctx, logger, st)
		select {
		case <-ctx.Done():
			stopCtx, cancel := cleanup.Context(ctx, cleanupTimeout)
			a.notify(stopCtx, logger, st, "STOPPING=1", "STATUS=Stopping; pods keep running")
			cancel()
			return
		case <-tick.C():
		case <-watchdog:
			a.pingWatchdog(ctx, logger, st)
		}
	}
}

// notifyChanges sends READY=1 once the first full sync is done, and the
// status line whenever it changes.
func (a *Agent) notifyChanges(ctx context.Context, logger klog.Logger, st *notifyState) {
	status, synced, progressing := a.serviceStatus(st.ready)
	var msg []string
	if synced && !st.ready {
		st.ready = true
		a.firstSyncs.stop()
		msg = append(msg, "READY=1")
		logger.Info("First full sync done; ready", "status", status)
	}
	if status != st.status {
		st.status = status
		msg = append(msg, "STATUS="+status)
	}
	if now := a.clock.Now(); !st.ready && progressing && now.Sub(st.lastExtend) >= extendStartPeriod {
		st.lastExtend = now
		msg = append(msg, fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", extendStartBy.Microseconds()))
	}
	a.notify(ctx, logger, st, msg...)
}

// pingWatchdog sends WATCHDOG=1 if the sync loop turns. A stalled loop
// gets no ping, so that the manager restarts the agent (KillMode=process
// leaves the pods running).
func (a *Agent) pingWatchdog(ctx context.Context, logger klog.Logger, st *notifyState) {
	if err := a.syncLoopHealthy(); err != nil {
		if st.pinging {
			logger.Error(err, "Withholding the watchdog ping: the sync loop is not turning")
			st.pinging = false
		}
		return
	}
	if !st.pinging {
		logger.Info("Sync loop turns again; pinging the watchdog")
		st.pinging = true
	}
	a.notify(ctx, logger, st, "WATCHDOG=1")
}

func (a *Agent) notify(ctx context.Context, logger klog.Logger, st *notifyState, msg ...string) {
	if len(msg) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := a.notifier.Notify(ctx, msg...)
	switch {
	case err != nil && err.Error() != st.lastErr:
		logger.Error(err, "Notifying the service manager failed", "message", msg)
		st.lastErr = err.Error()
	case err == nil:
		st.lastErr = ""
		logger.V(4).Info("Notified the service manager", "message", msg)
	}
}

// serviceStatus returns the status line for the service manager, whether
// the first full sync is done (only looked at while ready is false), and
// whether the start makes progress (the sync loop turns).
func (a *Agent) serviceStatus(ready bool) (status string, synced, progressing bool) {
	if !a.runtimeReady.Load() {
		return "Waiting for the container runtime at " + a.cfg.RuntimeEndpoint, false, false
	}
	if a.syncLoopTick.Load() == 0 {
		return "Starting the sync loop", false, false
	}
	if err := a.syncLoopHealthy(); err != nil {
		return "Unhealthy: " + err.Error(), false, false
	}
	if !ready {
		if err := a.plegHealthy(); err != nil {
			return "Starting: " + err.Error(), false, true
		}
		if !a.merger.AllSourcesSeen() {
			return "Waiting for a first complete read of the pod sources", false, true
		}
		pods := a.merger.Pods()
		if done := a.firstSyncs.count(pods); done < len(pods) {
			return fmt.Sprintf("Starting pods: %d of %d synced", done, len(pods)), false, true
		}
	}
	parts := []string{"Running " + plural(len(a.pods.List()), "pod")}
	if refused := len(a.merger.Errors()); refused > 0 {
		parts = append(parts, plural(refused, "manifest")+" refused")
	}
	if err := a.plegHealthy(); err != nil {
		parts = append(parts, "PLEG unhealthy: "+err.Error())
	}
	return strings.Join(parts, "; "), true, true
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// podSyncer is the pod workers' syncer, as firstSyncs wraps it.
type podSyncer interface {
	SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (podworkers.SyncResult, error)
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error)
}

var _ podSyncer = (*podworkers.Syncer)(nil)

// firstSyncs records which pods have been through a first SyncPod, until
// stop. Safe for concurrent use.
type firstSyncs struct {
	mu sync.Mutex
	// synced holds the UIDs of pods whose SyncPod returned, not cancelled;
	// nil once stopped.
	synced map[types.UID]bool
}

func newFirstSyncs() *firstSyncs {
	return &firstSyncs{synced: map[types.UID]bool{}}
}

// wrap returns s, recording each pod's SyncPod that returns before its
// context is cancelled.
func (f *firstSyncs) wrap(s podSyncer) podSyncer { return &recordingSyncer{podSyncer: s, rec: f} }

// count returns how many of pods have been synced once.
func (f *firstSyncs) count(pods []*v1.Pod) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range pods {
		if f.synced[p.UID] {
			n++
		}
	}
	return n
}

// stop ends the recording and forgets what was recorded.
func (f *firstSyncs) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced = nil
}

func (f *firstSyncs) record(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.synced != nil {
		f.synced[uid] = true
	}
}

type recordingSyncer struct {
	podSyncer
	rec *firstSyncs
}

func (r *recordingSyncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	res, err := r.podSyncer.SyncPod(ctx, pod, status)
	if ctx.Err() == nil {
		r.rec.record(pod.UID)
	}
	return res, err
}
