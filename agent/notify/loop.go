package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/cleanup"
	"github.com/minikubelet/minikubelet/internal/sdnotify"
)

// notifier is the service manager's side (internal/sdnotify.Notifier).
type notifier interface {
	// Notify sends states ("READY=1", "STATUS=...") as one message; it does
	// nothing when no manager listens. It must honour ctx's deadline.
	Notify(ctx context.Context, states ...string) error
	// WatchdogInterval is the manager's watchdog timeout, 0 for none.
	WatchdogInterval() time.Duration
}

var _ notifier = (*sdnotify.Notifier)(nil)

// agentState is how the agent is doing. Its methods are called from the
// Loop's goroutine and must be safe for that.
type agentState interface {
	// RuntimeReady reports whether the container runtime has answered.
	RuntimeReady() bool
	// SyncLoopStarted reports whether the syncLoop has turned once.
	SyncLoopStarted() bool
	// SyncLoopHealthy is nil while the syncLoop turns.
	SyncLoopHealthy() error
	// PLEGHealthy is nil while the PLEG sees the runtime.
	PLEGHealthy() error
}

// sourcesState is what the merge (agent/podconfig) says of the sources.
type sourcesState interface {
	// AllSourcesSeen reports whether every configured source has sent a
	// complete set of pods.
	AllSourcesSeen() bool
	// Pods are the pods the merged sources want.
	Pods() []*v1.Pod
	// Errors lists the manifests refused right now.
	Errors() []sources.ManifestError
}

// wantedPods are the pods the syncLoop dispatched (agent/podmanager).
type wantedPods interface {
	List() []*v1.Pod
}

// Config configures a Loop. Every field is required.
type Config struct {
	Notifier notifier
	Clock    clock.WithTicker
	// RuntimeEndpoint names the runtime waited for.
	RuntimeEndpoint string
	Agent           agentState
	Sources         sourcesState
	Pods            wantedPods
	// FirstSyncs records the pods synced once; the Loop stops it once
	// READY=1 is sent.
	FirstSyncs *FirstSyncs
}

// Loop keeps the service manager informed; see the package comment.
type Loop struct {
	cfg Config
}

// New returns a Loop; Run runs it.
func New(cfg Config) *Loop { return &Loop{cfg: cfg} }

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
	// stopTimeout bounds sending STOPPING=1 once ctx is done.
	stopTimeout = 5 * time.Second
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

// Run keeps the service manager informed until ctx is done, then sends
// STOPPING=1.
func (l *Loop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("notify")
	st := &notifyState{pinging: true}
	tick := l.cfg.Clock.NewTicker(notifyPeriod)
	defer tick.Stop()
	var watchdog <-chan time.Time
	if wd := l.cfg.Notifier.WatchdogInterval(); wd > 0 {
		t := l.cfg.Clock.NewTicker(wd / 2)
		defer t.Stop()
		watchdog = t.C()
		logger.Info("Service manager watchdog on", "timeout", wd, "pingEvery", wd/2)
	}
	for {
		l.notifyChanges(ctx, logger, st)
		select {
		case <-ctx.Done():
			stopCtx, cancel := cleanup.Context(ctx, stopTimeout)
			l.notify(stopCtx, logger, st, "STOPPING=1", "STATUS=Stopping; pods keep running")
			cancel()
			return
		case <-tick.C():
		case <-watchdog:
			l.pingWatchdog(ctx, logger, st)
		}
	}
}

// notifyChanges sends READY=1 once the first full sync is done, and the
// status line whenever it changes.
func (l *Loop) notifyChanges(ctx context.Context, logger klog.Logger, st *notifyState) {
	status, synced, progressing := l.serviceStatus(st.ready)
	var msg []string
	if synced && !st.ready {
		st.ready = true
		l.cfg.FirstSyncs.stop()
		msg = append(msg, "READY=1")
		logger.Info("First full sync done; ready", "status", status)
	}
	if status != st.status {
		st.status = status
		msg = append(msg, "STATUS="+status)
	}
	if now := l.cfg.Clock.Now(); !st.ready && progressing && now.Sub(st.lastExtend) >= extendStartPeriod {
		st.lastExtend = now
		msg = append(msg, fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", extendStartBy.Microseconds()))
	}
	l.notify(ctx, logger, st, msg...)
}

// pingWatchdog sends WATCHDOG=1 if the sync loop turns. A stalled loop
// gets no ping, so that the manager restarts the agent (KillMode=process
// leaves the pods running).
func (l *Loop) pingWatchdog(ctx context.Context, logger klog.Logger, st *notifyState) {
	if err := l.cfg.Agent.SyncLoopHealthy(); err != nil {
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
	l.notify(ctx, logger, st, "WATCHDOG=1")
}

func (l *Loop) notify(ctx context.Context, logger klog.Logger, st *notifyState, msg ...string) {
	if len(msg) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := l.cfg.Notifier.Notify(ctx, msg...)
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
func (l *Loop) serviceStatus(ready bool) (status string, synced, progressing bool) {
	if !l.cfg.Agent.RuntimeReady() {
		return "Waiting for the container runtime at " + l.cfg.RuntimeEndpoint, false, false
	}
	if !l.cfg.Agent.SyncLoopStarted() {
		return "Starting the sync loop", false, false
	}
	if err := l.cfg.Agent.SyncLoopHealthy(); err != nil {
		return "Unhealthy: " + err.Error(), false, false
	}
	if !ready {
		if err := l.cfg.Agent.PLEGHealthy(); err != nil {
			return "Starting: " + err.Error(), false, true
		}
		if !l.cfg.Sources.AllSourcesSeen() {
			return "Waiting for a first complete read of the pod sources", false, true
		}
		pods := l.cfg.Sources.Pods()
		if done := l.cfg.FirstSyncs.count(pods); done < len(pods) {
			return fmt.Sprintf("Starting pods: %d of %d synced", done, len(pods)), false, true
		}
	}
	parts := []string{"Running " + plural(len(l.cfg.Pods.List()), "pod")}
	if refused := len(l.cfg.Sources.Errors()); refused > 0 {
		parts = append(parts, plural(refused, "manifest")+" refused")
	}
	if err := l.cfg.Agent.PLEGHealthy(); err != nil {
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
