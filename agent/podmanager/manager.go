package podmanager

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager holds the pods the sources want on this node. The syncLoop
// writes it; everything else reads it. Safe for concurrent use.
type Manager struct {
	// refs is told of each pod set and removed; nil without one.
	refs references

	mu   sync.RWMutex
	pods map[types.UID]*v1.Pod
}

// references keeps what the node's pods refer to in the API (node mode's
// configMap and secret watches): a pod that runs is registered at each
// change, one that is gone or has finished unregistered. Its methods must
// not block on the apiserver: they are called from the syncLoop.
type references interface {
	RegisterPod(pod *v1.Pod)
	UnregisterPod(uid types.UID)
}

// Option configures a Manager.
type Option func(*Manager)

// WithReferences has the Manager register with refs each pod it is given
// that has not finished, and unregister it when it finishes or is
// removed, as the kubelet's pod manager does with its secret and
// configMap managers.
func WithReferences(refs references) Option {
	return func(m *Manager) { m.refs = refs }
}

// New returns an empty Manager.
func New(opts ...Option) *Manager {
	m := &Manager{pods: map[types.UID]*v1.Pod{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Set adds pod, or replaces the pod of its UID.
func (m *Manager) Set(pod *v1.Pod) {
	m.mu.Lock()
	m.pods[pod.UID] = pod
	m.mu.Unlock()
	if m.refs == nil {
		return
	}
	// A finished pod starts nothing and needs its objects no more; the
	// watches of those no other pod refers to can stop.
	if p := pod.Status.Phase; p == v1.PodSucceeded || p == v1.PodFailed {
		m.refs.UnregisterPod(pod.UID)
		return
	}
	m.refs.RegisterPod(pod)
}

// Remove forgets the pod of uid, if any.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	delete(m.pods, uid)
	m.mu.Unlock()
	if m.refs != nil {
		m.refs.UnregisterPod(uid)
	}
}

// Get returns the pod of uid, nil if there is none. The pod is shared:
// the caller must not change it.
func (m *Manager) Get(uid types.UID) *v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pods[uid]
}

// List returns the pods sorted by namespace and name. The pods are
// shared: the caller must not change them.
func (m *Manager) List() []*v1.Pod {
	m.mu.RLock()
	out := make([]*v1.Pod, 0, len(m.pods))
	for _, p := range m.pods {
		out = append(out, p)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
