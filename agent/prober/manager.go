package prober

import (
	"context"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/probe"
)

// Config configures a Manager.
type Config struct {
	// Runtime runs exec probes.
	Runtime probe.Execer
	Clock   clock.Clock
	// Results receives a Result each time a probe's outcome changes. The
	// caller owns it and must keep reading it while workers run; a worker
	// blocks on a full channel until its context ends.
	Results chan<- Result
	// HostIP is probed for pods that have no IP of their own (host
	// network).
	HostIP string
	// Observe, if set, is told of every probe run.
	Observe func(Run)
	// Forget, if set, is told when a probe worker stops: no more runs of
	// that probe of that container of pod will be observed.
	Forget func(pod *v1.Pod, container string, t Type)
	// Events records the kubelet's Unhealthy event for each failed
	// probe; nil records none.
	Events eventRecorder
}

// eventRecorder records the kubelet's events (agent/cluster/events).
type eventRecorder interface {
	Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any)
}

// Run is one probe run, as Config.Observe is told of it.
type Run struct {
	Pod       *v1.Pod
	Container string
	Type      Type
	Result    probe.Result
	Duration  time.Duration
}

// Manager runs the probe workers and keeps their results. Safe for
// concurrent use.
type Manager struct {
	cfg   Config
	http  *probe.HTTP
	start time.Time

	mu sync.Mutex
	// workers are the running workers by pod; a worker leaves when it is
	// stopped.
	workers map[types.UID]map[workerKey]*worker
	// statuses are the newest API statuses pushed by the status manager.
	statuses map[types.UID]v1.PodStatus
	// results are the outcomes that crossed their threshold, by container
	// ID and type. An absent result is the type's initial outcome:
	// liveness passing, readiness failing, startup not yet passed.
	results map[resultKey]probe.Result
}

type workerKey struct {
	uid       types.UID
	container string
	t         Type
}

type resultKey struct {
	containerID string
	t           Type
}

// New returns a Manager with no workers.
func New(cfg Config) *Manager {
	if cfg.Events == nil {
		cfg.Events = events.Discard{}
	}
	return &Manager{
		cfg:      cfg,
		http:     probe.NewHTTP(probe.UserAgent()),
		start:    cfg.Clock.Now(),
		workers:  map[types.UID]map[workerKey]*worker{},
		statuses: map[types.UID]v1.PodStatus{},
		results:  map[resultKey]probe.Result{},
	}
}

// AddPod starts a worker for each probe of pod's containers (regular ones
// and sidecars) that has none, restarts those whose probe changed, and
// stops those whose probe is gone. It is idempotent. The workers run until
// ctx ends or the pod is removed.
func (m *Manager) AddPod(ctx context.Context, pod *v1.Pod) {
	want := map[workerKey]*worker{}
	add := func(c *v1.Container) {
		for t, spec := range map[Type]*v1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if spec != nil {
				k := workerKey{uid: pod.UID, container: c.Name, t: t}
				want[k] = newWorker(m, k, pod, c, spec)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	running := m.workers[pod.UID]
	for k, w := range running {
		if nw, ok := want[k]; ok && equality.Semantic.DeepEqual(nw.spec, w.spec) && nw.startupGated == w.startupGated {
			delete(want, k) // unchanged: keep the running worker
			continue
		}
		w.stopLocked()
	}
	if len(want) == 0 {
		return
	}
	if running == nil {
		running = map[workerKey]*worker{}
		m.workers[pod.UID] = running
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "podUID", pod.UID)
	for k, w := range want {
		running[k] = w
		go w.run(klog.NewContext(ctx, logger.WithValues("container", k.container, "probe", k.t)))
	}
}

// StopLivenessAndStartup stops a terminating pod's liveness and startup
// probes, so that its containers are not killed again while they shut
// down; readiness goes on, as in the kubelet.
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers[uid] {
		if k.t != Readiness {
			w.stopLocked()
		}
	}
}

// RemovePod stops every worker of a pod and forgets its status.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(uid)
}

// CleanupPods removes the pods keep does not keep.
func (m *Manager) CleanupPods(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.workers {
		if !keep(uid) {
			m.removeLocked(uid)
		}
	}
	for uid := range m.statuses {
		if !keep(uid) {
			delete(m.statuses, uid)
		}
	}
}

func (m *Manager) removeLocked(uid types.UID) {
	for _, w := range m.workers[uid] {
		w.stopLocked()
	}
	delete(m.workers, uid)
	delete(m.statuses, uid)
}

// SetPodStatus records the newest API status of a pod and wakes its
// workers to look at it. It never blocks on a worker.
func (m *Manager) SetPodStatus(uid types.UID, st v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workers[uid]; !ok {
		return // no probes: nothing reads it
	}
	m.statuses[uid] = st
	for _, w := range m.workers[uid] {
		w.poke()
	}
}

// Unhealthy reports whether the container running as containerID failed
// its startup or liveness probe, and which.
func (m *Manager) Unhealthy(containerID string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range []Type{Startup, Liveness} {
		if m.results[resultKey{containerID, t}] == probe.Failure {
			return string(t), true
		}
	}
	return "", false
}

// Started reports whether container c, running as containerID, has passed
// its startup probe; a container without one has started once it runs.
func (m *Manager) Started(c *v1.Container, containerID string) bool {
	if c.StartupProbe == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[resultKey{containerID, Startup}] == probe.Success
}

// Ready reports whether container c, running as containerID, is ready: it
// has started and passed its readiness probe, if it has one.
func (m *Manager) Ready(c *v1.Container, containerID string) bool {
	if !m.Started(c, containerID) {
		return false
	}
	if c.ReadinessProbe == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[resultKey{containerID, Readiness}] == probe.Success
}

// podStatus returns the newest status pushed for a pod.
func (m *Manager) podStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.statuses[uid]
	return st, ok
}

// setResult records an outcome that crossed its threshold and reports
// whether it changes what the container's readers see.
func (m *Manager) setResult(containerID string, t Type, r probe.Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := resultKey{containerID, t}
	old, ok := m.results[k]
	m.results[k] = r
	if !ok {
		return r != initialResult(t)
	}
	return old != r
}

func (m *Manager) result(containerID string, t Type) probe.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[resultKey{containerID, t}]
}

// forgetResult drops a container's outcome of one probe type.
func (m *Manager) forgetResult(containerID string, t Type) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.results, resultKey{containerID, t})
}

// initialResult is what an absent result stands for.
func initialResult(t Type) probe.Result {
	switch t {
	case Liveness:
		return probe.Success
	case Readiness:
		return probe.Failure
	default:
		return probe.Unknown
	}
}

// runtimeID strips the "<runtime>://" prefix of an API container ID.
func runtimeID(apiID string) string {
	if i := strings.Index(apiID, "://"); i >= 0 {
		return apiID[i+3:]
	}
	return apiID
}
