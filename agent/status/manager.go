package status

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// Config configures a Manager.
type Config struct {
	Clock clock.PassiveClock
	// HostIP is the node's address, reported as every pod's hostIP and as
	// the podIP of host-network pods.
	HostIP string
	// RuntimeName prefixes container IDs ("containerd://<id>").
	RuntimeName string
	// Probes, if set, decides whether running containers have started and
	// are ready.
	Probes Probes
	// OnStatus, if set, is called with each status stored, outside the
	// manager's lock; it must not block.
	OnStatus func(uid types.UID, st v1.PodStatus)
	// Resources, if set, holds the pods' resize conditions and the
	// resources applied to their containers (agent/allocation).
	Resources Resources
}

// Resources is what a status needs of the pods' resize state.
type Resources interface {
	// ResizeConditions returns a pod's PodResizePending and
	// PodResizeInProgress conditions, if set.
	ResizeConditions(uid types.UID) []v1.PodCondition
	// Actuated returns the resources applied to a container of a pod.
	Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool)
}

// Manager keeps the newest API status of every pod. Safe for concurrent use.
type Manager struct {
	cfg Config
	mu  sync.RWMutex
	// statuses, terminal, written and seq are guarded by mu.
	statuses map[types.UID]v1.PodStatus
	// terminal holds why the agent itself terminates a pod (SetTerminal).
	terminal map[types.UID]Terminal
	// written holds, per pod, the number (from seq, which only grows) of
	// the last write of its status or terminal reason; a removal drops
	// it. SetPodStatus generates a status outside mu and stores it only
	// if no write came in between.
	written map[types.UID]uint64
	seq     uint64
}

// NewManager returns an empty Manager.
func NewManager(cfg Config) *Manager {
	return &Manager{cfg: cfg, statuses: map[types.UID]v1.PodStatus{}, terminal: map[types.UID]Terminal{}, written: map[types.UID]uint64{}}
}

// wroteLocked numbers a write of uid's status; m.mu must be held.
func (m *Manager) wroteLocked(uid types.UID) {
	m.seq++
	m.written[uid] = m.seq
}

// SetPodStatus computes and stores the API status of pod from its runtime
// status. The status is generated outside the manager's lock, so that the
// workers of many pods reporting at once (a batch of new pods) do not
// wait for each other's; a write of the same pod's status that came
// meanwhile (SetTerminal, Reject, RemovePod) makes it generate again from
// that.
func (m *Manager) SetPodStatus(pod *v1.Pod, rs *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting) {
	now := metav1.NewTime(m.cfg.Clock.Now())
	for {
		m.mu.RLock()
		old, ok := m.statuses[pod.UID]
		t, terminal := m.terminal[pod.UID]
		seen := m.written[pod.UID]
		m.mu.RUnlock()
		st := m.generate(pod, rs, waiting, old, ok, now)
		if terminal {
			applyTerminal(&st, old, t, now)
		}
		m.mu.Lock()
		if m.written[pod.UID] != seen {
			m.mu.Unlock()
			continue
		}
		m.statuses[pod.UID] = st
		m.wroteLocked(pod.UID)
		m.mu.Unlock()
		if m.cfg.OnStatus != nil {
			m.cfg.OnStatus(pod.UID, st)
		}
		return
	}
}

// generate is SetPodStatus's status of pod, from old (ok: there is one).
func (m *Manager) generate(pod *v1.Pod, rs *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting, old v1.PodStatus, ok bool, now metav1.Time) v1.PodStatus {
	if !ok {
		old = v1.PodStatus{StartTime: &now}
	}
	in := GenerateInput{
		Pod:         pod,
		Runtime:     rs,
		Waiting:     waiting,
		Old:         old,
		Now:         now,
		HostIP:      m.cfg.HostIP,
		RuntimeName: m.cfg.RuntimeName,
		Probes:      m.cfg.Probes,
	}
	if r := m.cfg.Resources; r != nil {
		in.ResizeConditions = r.ResizeConditions(pod.UID)
		in.Actuated = func(name string) (v1.ResourceRequirements, bool) { return r.Actuated(pod.UID, name) }
	}
	return Generate(in)
}

// RemovePod forgets a pod's status, unless the agent terminated the pod for
// a reason of its own (SetTerminal): that status stays until Forget.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.terminal[uid]; ok {
		return
	}
	delete(m.statuses, uid)
	delete(m.written, uid)
}

// Get returns the newest status of a pod and whether there is one. The
// caller may keep the result but must not modify its slices.
func (m *Manager) Get(uid types.UID) (v1.PodStatus, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st, ok := m.statuses[uid]
	return st, ok
}
