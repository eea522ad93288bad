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
	mu   sync.RWMutex
	pods map[types.UID]*v1.Pod
}

// New returns an empty Manager.
func New() *Manager {
	return &Manager{pods: map[types.UID]*v1.Pod{}}
}

// Set adds pod, or replaces the pod of its UID.
func (m *Manager) Set(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[pod.UID] = pod
}

// Remove forgets the pod of uid, if any.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
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
