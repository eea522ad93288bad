package eviction

import (
	"context"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/events"
)

// The kubelet's timings (pkg/kubelet/eviction).
const (
	// DefaultMonitoringPeriod is how often the signals are measured
	// without a notification (the kubelet's evictionMonitoringPeriod).
	DefaultMonitoringPeriod = 10 * time.Second
	// podCleanupTimeout bounds the wait for an evicted pod to be gone
	// before the next round; podCleanupPoll is how often it is checked.
	podCleanupTimeout = 30 * time.Second
	podCleanupPoll    = 100 * time.Millisecond
	// notifierRefreshInterval is how often the memory notifications'
	// thresholds are set again from the figures of the moment.
	notifierRefreshInterval = 10 * time.Second
)

// summaryProvider reads the node's and the pods' usage (agent/stats); it
// must read afresh at each call.
type summaryProvider interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) *statsapi.Summary
}

// activePods are the pods the node runs and may evict: started, not being
// terminated, not finished. Safe for concurrent use.
type activePods interface {
	ActivePods() []*v1.Pod
	// Get returns the pod the sources want with uid, or nil.
	Get(uid types.UID) *v1.Pod
	// Finished returns the pods whose containers have all ended for
	// good (phase Succeeded or Failed) and whose workers still hold
	// them in the runtime.
	Finished() []*v1.Pod
	// Gone reports whether the node holds nothing of the pod any more
	// (no worker; its containers, sandboxes and volumes removed).
	Gone(uid types.UID) bool
}

// imageReclaimer removes every unused image (agent/imagegc), the minimum
// age aside.
type imageReclaimer interface {
	DeleteUnusedImages(ctx context.Context) error
}

// eventRecorder records the kubelet's events (agent/cluster/events).
type eventRecorder interface {
	Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any)
	AnnotatedEventf(ref *v1.ObjectReference, annotations map[string]string, eventType, reason, messageFmt string, args ...any)
}

// Config configures a Manager. Pods, Stats and Clock are required.
type Config struct {
	// Thresholds are the eviction thresholds (ParseThresholds).
	Thresholds []Threshold
	// MaxPodGracePeriod is --eviction-max-pod-grace-period: the longest
	// grace, in seconds, of a pod evicted for a soft threshold; negative
	// defers to the pod's own.
	MaxPodGracePeriod int64
	// PressureTransitionPeriod is how long a pressure condition holds
	// after its thresholds stop being met.
	PressureTransitionPeriod time.Duration
	// MonitoringPeriod is how often the signals are measured
	// (DefaultMonitoringPeriod when zero).
	MonitoringPeriod time.Duration
	// LocalStorageLimits enforces ephemeral-storage limits and emptyDir
	// sizeLimits (--local-storage-capacity-isolation).
	LocalStorageLimits bool
	// StaticPodsCritical is the kubelet's rule: every static pod is
	// critical, never evicted and always admitted. Without it a static pod
	// is critical only by its priority, and an evicted one starts again
	// once its pressure has cleared (see doc.go).
	StaticPodsCritical bool
	// DedicatedImageFs says whether the runtime's image filesystem is not
	// the one of the root dir; asked once, false when it fails.
	DedicatedImageFs func(ctx context.Context) (bool, error)
	// Notifications, if set, wake the manager when a memory threshold
	// may have been crossed between two measures (notify_linux.go).
	Notifications notifierFactory
	// PodsCgroup is the cgroup holding every pod, whose memory the
	// allocatableMemory.available notification watches.
	PodsCgroup string
	Stats      summaryProvider
	Pods       activePods
	// Images, if set, reclaims the images no container uses under disk
	// pressure.
	Images imageReclaimer
	// Events records the node's and the pods' eviction events; none when
	// nil.
	Events eventRecorder
	// NodeName names the node in its events.
	NodeName string
	// OnEviction, if set, is called with the signal of each eviction
	// (kubelet_evictions).
	OnEviction func(signal string)
	Clock      clock.WithTicker
}

// Manager measures the eviction signals and, when thresholds are met,
// reclaims node-level resources, then evicts pods one at a time; it keeps
// the node's pressure conditions and decides the eviction admission of
// new pods. Build it with New; Run once. Pressure, Admit and Requests
// are safe for concurrent use.
type Manager struct {
	cfg Config
	// requests carries the manager's requests to the syncLoop:
	// unbuffered, written by Run's goroutine, read by the syncLoop, never
	// closed.
	requests chan Request
	// wake is poked by the memory notifications: capacity 1, so that a
	// burst collapses into one round; never closed.
	wake chan struct{}

	mu sync.RWMutex
	// conditions are the pressure conditions now, transition period
	// included. Guarded by mu.
	conditions []v1.NodeConditionType

	// The rest is touched only by Run's goroutine.
	firstObservedAt   map[Threshold]time.Time
	condLastObserved  map[v1.NodeConditionType]time.Time
	met               []Threshold
	lastObservations  observations
	dedicatedImageFs  *bool
	notifiersUpdated  time.Time
	notifiers         []*memoryNotifier
	notifyWG          sync.WaitGroup
	loggedConditions  []v1.NodeConditionType
	lastUnevictableAt time.Time

	// staticMu guards static: the static pods evicted or refused, which
	// restartStatic starts again (Run's goroutine) and AdmitNew records
	// (the syncLoop's).
	staticMu sync.Mutex
	static   map[types.UID]*staticEviction
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.MonitoringPeriod <= 0 {
		cfg.MonitoringPeriod = DefaultMonitoringPeriod
	}
	if cfg.Events == nil {
		cfg.Events = discard{}
	}
	return &Manager{
		cfg:              cfg,
		requests:         make(chan Request),
		wake:             make(chan struct{}, 1),
		firstObservedAt:  map[Threshold]time.Time{},
		condLastObserved: map[v1.NodeConditionType]time.Time{},
		static:           map[types.UID]*staticEviction{},
	}
}

// Requests is what the manager asks of the syncLoop; the syncLoop must
// answer each with Request.Done.
func (m *Manager) Requests() <-chan Request { return m.requests }

// Pressure reports the node's pressure conditions now (MemoryPressure,
// DiskPressure, PIDPressure), each held for the transition period after
// its thresholds stopped being met.
func (m *Manager) Pressure() (memory, disk, pid bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return hasCondition(m.conditions, v1.NodeMemoryPressure), hasCondition(m.conditions, v1.NodeDiskPressure), hasCondition(m.conditions, v1.NodePIDPressure)
}

// Run measures the signals every MonitoringPeriod and at each memory
// notification, and acts on them, until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("eviction")
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting the eviction manager", "thresholds", thresholdStrings(m.cfg.Thresholds), "monitoringPeriod", m.cfg.MonitoringPeriod,
		"pressureTransitionPeriod", m.cfg.PressureTransitionPeriod, "memoryNotifications", m.cfg.Notifications != nil, "staticPodsCritical", m.cfg.StaticPodsCritical)
	defer m.closeNotifiers()
	ticker := m.cfg.Clock.NewTicker(m.cfg.MonitoringPeriod)
	defer ticker.Stop()
	for {
		if evicted := m.synchronize(ctx); len(evicted) > 0 {
			m.waitForCleanup(ctx, evicted)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-m.wake:
			logger.V(2).Info("Memory notification: measuring at once")
		}
	}
}

// synchronize measures the signals, updates the pressure conditions,
// starts again the static pods whose pressure cleared, and evicts what
// the thresholds met call for: pods over their local storage limits, or
// else, after reclaiming what the node can, one pod. It returns the pods
// it evicted.
func (m *Manager) synchronize(ctx context.Context) []*v1.Pod {
	logger := klog.FromContext(ctx)
	if m.dedicatedImageFs == nil {
		dedicated := false
		if m.cfg.DedicatedImageFs != nil {
			d, err := m.cfg.DedicatedImageFs(ctx)
			if err != nil {
				logger.Info("Could not tell whether the image filesystem is the root dir's; taking it to be", "err", err)
				return nil
			}
			dedicated = d
		}
		m.dedicatedImageFs = &dedicated
		logger.V(2).Info("Image filesystem", "dedicated", dedicated)
	}
	summary := m.cfg.Stats.Summary(ctx, false)
	now := m.cfg.Clock.Now()
	m.updateNotifiers(ctx, summary, now)
	obs := observe(summary)
	stats := podStats(summary)

	met := thresholdsMet(m.cfg.Thresholds, obs, false)
	if len(m.met) > 0 {
		// Thresholds met before hold until their minimum reclaim is met.
		met = mergeThresholds(met, thresholdsMet(m.met, obs, true))
	}
	first := firstObservedAt(met, m.firstObservedAt, now)
	lastObserved := conditionsLastObservedAt(conditionsOf(met), m.condLastObserved, now)
	conds := conditionsObservedSince(lastObserved, m.cfg.PressureTransitionPeriod, now)
	active := gracePeriodsMet(first, now)
	m.mu.Lock()
	m.conditions = conds
	m.mu.Unlock()
	m.firstObservedAt, m.condLastObserved, m.met = first, lastObserved, active
	toAct := thresholdsUpdated(active, obs, m.lastObservations)
	m.lastObservations = obs
	m.logConditions(logger, conds, met, obs)

	m.restartStatic(ctx, now)
	pods := m.cfg.Pods.ActivePods()
	if m.cfg.LocalStorageLimits {
		if evicted := m.localStorageEviction(ctx, pods, stats); len(evicted) > 0 {
			return evicted
		}
	}
	if len(toAct) == 0 {
		return nil
	}
	// Memory first, as the kubelet; then, where the kubelet takes them in
	// no set order, in signalOrder's.
	slices.SortStableFunc(toAct, func(a, b Threshold) int {
		return slices.Index(signalOrder, a.Signal) - slices.Index(signalOrder, b.Signal)
	})
	t := toAct[0]
	resourceName := signalResource[t.Signal]
	avail := obs[t.Signal].availableQuantity()
	logger.Info("Eviction threshold met; attempting to reclaim", "threshold", t.String(), "resource", resourceName, "available", avail.String())
	m.cfg.Events.Eventf(events.Node(m.cfg.NodeName), v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", resourceName)
	if m.reclaimNodeLevel(ctx, t.Signal) {
		logger.Info("Reclaimed enough without evicting a pod", "resource", resourceName)
		return nil
	}
	if len(pods) == 0 {
		logger.Info("Eviction thresholds are met, but no pod runs that could be evicted", "threshold", t.String())
		return nil
	}
	rankFor(t.Signal, *m.dedicatedImageFs)(pods, stats)
	logger.Info("Pods ranked for eviction", "pods", klog.KObjSlice(pods))
	for _, pod := range pods {
		grace := int64(0) // hard: no grace
		if !t.hard() {
			grace = softGrace(pod, m.cfg.MaxPodGracePeriod)
		}
		msg, annotations := evictionMessage(resourceName, pod, stats, append([]Threshold{t}, active...), obs)
		if m.evict(ctx, pod, grace, msg, annotations, string(t.Signal), conditionOf(t.Signal)) {
			return []*v1.Pod{pod}
		}
	}
	if now.Sub(m.lastUnevictableAt) >= time.Minute {
		m.lastUnevictableAt = now
		logger.Info("Eviction thresholds are met, but no pod could be evicted: every pod that runs is critical", "threshold", t.String())
	}
	return nil
}

// softGrace is the grace period of a pod evicted for a soft threshold:
// --eviction-max-pod-grace-period, or the pod's own when shorter or when
// the flag is negative.
func softGrace(pod *v1.Pod, maxGrace int64) int64 {
	own := int64(v1.DefaultTerminationGracePeriodSeconds)
	if p := pod.Spec.TerminationGracePeriodSeconds; p != nil {
		own = *p
	}
	if maxGrace < 0 || own < maxGrace {
		return max(own, 0)
	}
	return maxGrace
}

// conditionOf is the condition a signal raises.
func conditionOf(s Signal) v1.NodeConditionType { return signalCondition[s] }

// logConditions logs the conditions when they change, with the thresholds
// met and what was observed.
func (m *Manager) logConditions(logger klog.Logger, conds []v1.NodeConditionType, met []Threshold, obs observations) {
	if slices.Equal(conds, m.loggedConditions) {
		return
	}
	m.loggedConditions = conds
	kv := []any{"conditions", conds, "thresholdsMet", thresholdStrings(met)}
	for _, t := range met {
		q := obs[t.Signal].availableQuantity()
		kv = append(kv, string(t.Signal), q.String())
	}
	logger.Info("Node pressure conditions changed", kv...)
}

// thresholdStrings is ts as their String, for logs.
func thresholdStrings(ts []Threshold) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

// waitForCleanup waits, at most podCleanupTimeout, until the node holds
// nothing of the evicted pods, so that the next round measures without
// them.
func (m *Manager) waitForCleanup(ctx context.Context, pods []*v1.Pod) {
	logger := klog.FromContext(ctx)
	deadline := m.cfg.Clock.Now().Add(podCleanupTimeout)
	for {
		done := true
		for _, pod := range pods {
			done = done && m.cfg.Pods.Gone(pod.UID)
		}
		if done {
			logger.V(2).Info("Evicted pods cleaned up", "pods", klog.KObjSlice(pods))
			return
		}
		if !m.cfg.Clock.Now().Before(deadline) {
			logger.Info("Timed out waiting for evicted pods to be cleaned up", "pods", klog.KObjSlice(pods))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.Clock.After(podCleanupPoll):
		}
	}
}

// discard records no event.
type discard struct{}

func (discard) Eventf(*v1.ObjectReference, string, string, string, ...any) {}
func (discard) AnnotatedEventf(*v1.ObjectReference, map[string]string, string, string, string, ...any) {
}
