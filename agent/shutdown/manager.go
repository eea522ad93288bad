package shutdown

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Reason and Message are what the status of a pod terminated for a node
// shutdown says, as with the kubelet.
const (
	Reason  = "Terminated"
	Message = "Pod was terminated in response to imminent node shutdown."
)

// The inhibitor lock the manager takes, as logind lists it
// (systemd-inhibit --list).
const (
	inhibitWhat = "shutdown"
	inhibitWho  = "minikubelet"
	inhibitWhy  = "minikubelet needs time to stop pods gracefully"
	inhibitMode = "delay"
)

const (
	// pollInterval is how often the manager checks whether the pods it
	// asked to terminate have stopped.
	pollInterval = 200 * time.Millisecond
	// reconnectInitial, doubling to reconnectMax, is the wait before
	// dialling the bus again after the connection was lost. The kubelet
	// waits 1s every time.
	reconnectInitial = time.Second
	reconnectMax     = 30 * time.Second
	// reloadWait bounds how long the manager waits for logind to show a
	// raised InhibitDelayMaxSec after it was told to reload (the reload is
	// a signal: logind applies it asynchronously); reloadPoll is how often
	// it looks meanwhile.
	reloadWait = 2 * time.Second
	reloadPoll = 100 * time.Millisecond
)

// Kill asks for one pod to be terminated for the node's shutdown.
type Kill struct {
	Pod *v1.Pod
	// GracePeriod in seconds; the pod's worker shrinks it to the pod's own
	// grace period (deletion grace included) when that is shorter.
	GracePeriod int64
	// Reason and Message are what the pod's status reports.
	Reason  string
	Message string
}

// node is the manager's view of the node's pods. The agent implements it by
// handing each request to its syncLoop. The manager calls it from Run's
// goroutine only, one call at a time; each call returns ctx's error when ctx
// ends first.
type node interface {
	// StopAdmitting keeps any pod from starting from now on (new pods,
	// restarts of terminated ones) and returns the pods that run: every pod
	// the node has that is not in a terminal phase.
	StopAdmitting(ctx context.Context) ([]*v1.Pod, error)
	// TerminatePods starts terminating each pod with its grace period and
	// makes its status report the kill's reason. It does not wait for the
	// pods to stop.
	TerminatePods(ctx context.Context, kills []Kill) error
	// Terminated reports whether every container of the pod has stopped.
	Terminated(uid types.UID) bool
	// Resume undoes StopAdmitting after a shutdown was cancelled: the pods
	// the node should run start again, afresh.
	Resume(ctx context.Context) error
}

// logind is what the manager needs of systemd-logind (and of systemd, to
// make logind reload) over one D-Bus connection; the manager dials a new one
// when it is lost. Calls may block on the bus; each ends when ctx does.
type logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: how long it lets
	// delay locks hold up a shutdown.
	InhibitDelayMax(ctx context.Context) (time.Duration, error)
	// PreparingForShutdown is logind's PreparingForShutdown: whether a
	// shutdown is under way, PrepareForShutdown(true) sent.
	PreparingForShutdown(ctx context.Context) (bool, error)
	// Inhibit takes an inhibitor lock. It is held until the returned Closer
	// is closed, even after the connection is lost.
	Inhibit(ctx context.Context, what, who, why, mode string) (io.Closer, error)
	// ReloadLogind makes logind read its configuration again.
	ReloadLogind(ctx context.Context) error
	// NextPrepareForShutdown waits for logind's next PrepareForShutdown
	// signal and returns its value. Signals come in the order logind sent
	// them, from the moment the connection was made. It fails once the
	// connection is lost.
	NextPrepareForShutdown(ctx context.Context) (bool, error)
	// Close closes the connection; inhibitor locks stay held.
	Close() error
}

// Config configures a Manager.
type Config struct {
	// GracePeriod is --shutdown-grace-period: how long the node's shutdown
	// is delayed, in all, to terminate pods. It must be positive.
	GracePeriod time.Duration
	// CriticalPodsGracePeriod is --shutdown-grace-period-critical-pods: the
	// part of GracePeriod kept for critical pods, which are terminated
	// after the others. 0 <= CriticalPodsGracePeriod <= GracePeriod.
	CriticalPodsGracePeriod time.Duration
	// Node is where pods are terminated.
	Node node
	// BusAddress is the system bus's D-Bus address; empty means
	// $DBUS_SYSTEM_BUS_ADDRESS, else unix:path=/var/run/dbus/system_bus_socket.
	BusAddress string
	// LogindConfDir is where the drop-in raising logind's
	// InhibitDelayMaxSec is written; empty means DefaultLogindConfDir.
	LogindConfDir string
	Clock         clock.WithTicker
}

// Manager terminates the node's pods when the node shuts down. Create it
// with New and run it with Run, once.
type Manager struct {
	cfg  Config
	dial func(ctx context.Context) (logind, error)

	// Owned by Run's goroutine.
	//
	// lock is the inhibitor lock held, if any.
	lock io.Closer
	// shuttingDown: a PrepareForShutdown(true) was acted on and no
	// cancellation seen since.
	shuttingDown bool
}

// New returns a Manager for cfg; it does no I/O.
func New(cfg Config) *Manager {
	m := newManager(cfg, nil)
	m.dial = func(ctx context.Context) (logind, error) { return dialBus(ctx, cfg.BusAddress) }
	return m
}

func newManager(cfg Config, dial func(ctx context.Context) (logind, error)) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.LogindConfDir == "" {
		cfg.LogindConfDir = DefaultLogindConfDir
	}
	return &Manager{cfg: cfg, dial: dial}
}

// Run watches for the node's shutdown until ctx ends, then releases the
// inhibitor lock. When logind cannot be reached at start it logs why and
// returns at once: the node then shuts down without waiting for pods. A
// connection lost later is dialled again with back-off.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("shutdown")
	ctx = klog.NewContext(ctx, logger)
	defer m.releaseLock(logger)

	bus, preparing, err := m.connect(ctx, logger)
	if err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Graceful node shutdown is OFF: systemd-logind cannot be reached on the system bus, so pods will not be terminated before the node shuts down",
				"shutdownGracePeriod", m.cfg.GracePeriod)
		}
		return
	}
	logger.Info("Graceful node shutdown is on: holding a delay inhibitor lock of systemd-logind",
		"shutdownGracePeriod", m.cfg.GracePeriod, "shutdownGracePeriodCriticalPods", m.cfg.CriticalPodsGracePeriod)
	for {
		err := m.serve(ctx, logger, bus, preparing)
		_ = bus.Close()
		if ctx.Err() != nil {
			return
		}
		backoff := reconnectInitial
		for {
			logger.Error(err, "No connection to systemd-logind; reconnecting", "retryIn", backoff)
			select {
			case <-ctx.Done():
				return
			case <-m.cfg.Clock.After(backoff):
			}
			bus, preparing, err = m.connect(ctx, logger)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			backoff = min(2*backoff, reconnectMax)
		}
		logger.Info("Reconnected to systemd-logind", "preparingForShutdown", preparing)
	}
}

// connect dials the bus, makes sure logind lets the lock delay a shutdown
// for the grace period, takes the lock unless the node is shutting down,
// and reads whether logind prepares for a shutdown right now.
func (m *Manager) connect(ctx context.Context, logger klog.Logger) (logind, bool, error) {
	bus, err := m.dial(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("connect to the system bus: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = bus.Close()
		}
	}()
	current, err := bus.InhibitDelayMax(ctx)
	if err != nil {
		return nil, false, err
	}
	if current < m.cfg.GracePeriod {
		m.raiseInhibitDelay(ctx, logger, bus, current)
	}
	if !m.shuttingDown {
		if err := m.acquireLock(ctx, bus); err != nil {
			return nil, false, err
		}
	}
	preparing, err := bus.PreparingForShutdown(ctx)
	if err != nil {
		return nil, false, err
	}
	ok = true
	return bus, preparing, nil
}

// serve acts on logind's signals until the connection is lost or ctx ends.
// preparing is logind's state at connect: a shutdown started or cancelled
// while there was no connection is acted on first.
func (m *Manager) serve(ctx context.Context, logger klog.Logger, bus logind, preparing bool) error {
	if preparing != m.shuttingDown {
		if err := m.handle(ctx, logger, bus, preparing); err != nil {
			return err
		}
	}
	for {
		active, err := bus.NextPrepareForShutdown(ctx)
		if err != nil {
			return err
		}
		if err := m.handle(ctx, logger, bus, active); err != nil {
			return err
		}
	}
}

// handle acts on PrepareForShutdown(active). An error means the lock could
// not be taken again: the caller reconnects, which takes it.
func (m *Manager) handle(ctx context.Context, logger klog.Logger, bus logind, active bool) error {
	switch {
	case active && m.shuttingDown:
		logger.V(2).Info("PrepareForShutdown(true) again; the pods were terminated already")
		m.releaseLock(logger)
	case active:
		m.shuttingDown = true
		start := m.cfg.Clock.Now()
		logger.Info("Node is shutting down: terminating pods",
			"shutdownGracePeriod", m.cfg.GracePeriod, "shutdownGracePeriodCriticalPods", m.cfg.CriticalPodsGracePeriod)
		m.terminatePods(ctx, logger)
		m.releaseLock(logger)
		logger.Info("Released the inhibitor lock: the node's shutdown proceeds", "took", m.cfg.Clock.Since(start))
	case m.shuttingDown:
		m.shuttingDown = false
		logger.Info("Node shutdown was cancelled: taking the inhibitor lock again and starting the pods again")
		lockErr := m.acquireLock(ctx, bus)
		if err := m.cfg.Node.Resume(ctx); err != nil {
			logger.Error(err, "Starting the pods again failed")
		}
		return lockErr
	case m.lock == nil:
		logger.V(2).Info("PrepareForShutdown(false) while no shutdown was under way; taking the inhibitor lock")
		return m.acquireLock(ctx, bus)
	}
	return nil
}

// terminatePods terminates the pods in two groups, regular then critical,
// each within its part of the grace period, waiting for one group to stop
// (or its time to run out) before the next.
func (m *Manager) terminatePods(ctx context.Context, logger klog.Logger) {
	pods, err := m.cfg.Node.StopAdmitting(ctx)
	if err != nil {
		logger.Error(err, "Listing the pods to terminate failed")
		return
	}
	for _, g := range groupPods(pods, m.cfg.GracePeriod, m.cfg.CriticalPodsGracePeriod) {
		if len(g.pods) == 0 {
			continue // the kubelet does not wait for an empty group either
		}
		kills := make([]Kill, 0, len(g.pods))
		for _, pod := range g.pods {
			grace := g.podGracePeriod(pod)
			logger.Info("Terminating pod for the node's shutdown", "pod", klog.KObj(pod), "podUID", pod.UID, "group", g.name, "gracePeriod", grace)
			kills = append(kills, Kill{Pod: pod, GracePeriod: grace, Reason: Reason, Message: Message})
		}
		if err := m.cfg.Node.TerminatePods(ctx, kills); err != nil {
			logger.Error(err, "Terminating pods failed", "group", g.name)
			return
		}
		if left := m.waitTerminated(ctx, g); len(left) > 0 {
			logger.Info("Pods still running at the end of their group's grace period; going on", "group", g.name, "period", g.period, "pods", klog.KObjSlice(left))
		} else {
			logger.Info("Pods terminated", "group", g.name, "pods", len(g.pods))
		}
	}
}

// waitTerminated waits until every pod of g has stopped, or g's period has
// passed, or ctx ends; it returns the pods still running.
func (m *Manager) waitTerminated(ctx context.Context, g group) []*v1.Pod {
	deadline := m.cfg.Clock.Now().Add(g.period)
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var running []*v1.Pod
		for _, pod := range g.pods {
			if !m.cfg.Node.Terminated(pod.UID) {
				running = append(running, pod)
			}
		}
		left := deadline.Sub(m.cfg.Clock.Now())
		if len(running) == 0 || left <= 0 {
			return running
		}
		wait := min(pollInterval, left)
		if timer == nil {
			timer = m.cfg.Clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return running
		case <-timer.C():
		}
	}
}

// acquireLock takes a new inhibitor lock, then releases the one held, if
// any, so that no moment goes without.
func (m *Manager) acquireLock(ctx context.Context, bus logind) error {
	lock, err := bus.Inhibit(ctx, inhibitWhat, inhibitWho, inhibitWhy, inhibitMode)
	if err != nil {
		return fmt.Errorf("take logind's %s inhibitor lock for %s: %w", inhibitMode, inhibitWhat, err)
	}
	old := m.lock
	m.lock = lock
	if old != nil {
		_ = old.Close()
	}
	return nil
}

// releaseLock closes the inhibitor lock's file descriptor, if one is held:
// logind then goes on with a shutdown it delays.
func (m *Manager) releaseLock(logger klog.Logger) {
	if m.lock == nil {
		return
	}
	if err := m.lock.Close(); err != nil {
		logger.Error(err, "Closing the inhibitor lock failed")
	}
	m.lock = nil
}

// raiseInhibitDelay writes the logind drop-in that lets a delay lock hold
// up a shutdown for the whole grace period, and makes logind reload, as the
// kubelet does. Failing that, it says how long the node's shutdown will
// wait instead, and the manager goes on with what logind allows (the
// kubelet gives up graceful shutdown altogether then).
func (m *Manager) raiseInhibitDelay(ctx context.Context, logger klog.Logger, bus logind, current time.Duration) {
	want := m.cfg.GracePeriod
	path, err := writeDropIn(m.cfg.LogindConfDir, want)
	if err != nil {
		logger.Error(err, "logind's InhibitDelayMaxSec is shorter than --shutdown-grace-period and the drop-in raising it cannot be written: the node's shutdown will wait at most InhibitDelayMaxSec for pods",
			"inhibitDelayMax", current, "shutdownGracePeriod", want)
		return
	}
	logger.Info("Raising logind's InhibitDelayMaxSec to --shutdown-grace-period", "from", current, "to", want, "dropIn", path)
	if err := bus.ReloadLogind(ctx); err != nil {
		logger.Error(err, "logind cannot be made to reload its configuration: until it restarts, the node's shutdown will wait at most InhibitDelayMaxSec for pods",
			"inhibitDelayMax", current, "shutdownGracePeriod", want, "dropIn", path)
		return
	}
	deadline := m.cfg.Clock.Now().Add(reloadWait)
	for {
		current, err = bus.InhibitDelayMax(ctx)
		if err == nil && current >= want {
			logger.Info("logind's InhibitDelayMaxSec raised", "inhibitDelayMax", current)
			return
		}
		if !m.cfg.Clock.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-m.cfg.Clock.After(reloadPoll):
		}
	}
	logger.Error(err, "logind's InhibitDelayMaxSec is still shorter than --shutdown-grace-period after a reload (does another drop-in override it?): the node's shutdown will wait at most InhibitDelayMaxSec for pods",
		"inhibitDelayMax", current, "shutdownGracePeriod", want, "dropIn", path)
}
