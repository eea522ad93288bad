package agent

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podManager holds the pods the sources want on this node. The syncLoop
// writes it; the HTTP server reads it. Safe for concurrent use.
type podManager struct {
	mu   sync.RWMutex
	pods map[types.UID]*v1.Pod
}

func newPodManager() *podManager {
	return &podManager{pods: map[types.UID]*v1.Pod{}}
}

func (m *podManager) set(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[pod.UID] = pod
}

func (m *podManager) remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

func (m *podManager) get(uid types.UID) *v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pods[uid]
}

// list returns the pods sorted by namespace and name.
func (m *podManager) list() []*v1.Pod {
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
