package stats

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// wantedPods are the pods the sources want (agent/podmanager).
type wantedPods interface {
	List() []*v1.Pod
}

// runtimePods is what the runtime holds, as the PLEG cache last saw it.
type runtimePods interface {
	Get(uid types.UID) (*kubecontainer.PodStatus, error)
}

// podCgroups names pods' and containers' cgroups (cgroups.Manager).
type podCgroups interface {
	// PodCgroupParent is the cgroup parent a pod's sandbox gets.
	PodCgroupParent(pod *v1.Pod) string
	// FindPodCgroupOf returns the pod's cgroup as it exists.
	FindPodCgroupOf(pod *v1.Pod) (string, bool)
	// ContainerCgroup is the cgroup of container id below parent.
	ContainerCgroup(parent, id string) string
}

// PodLister lists, for the Provider (Config.Pods), the pods the sources
// want that have a ready sandbox, with their running containers and
// cgroups. Make it with NewPodLister; every field of PodListerDeps is
// required. It is safe for concurrent use as far as they are.
type PodLister struct {
	deps PodListerDeps

	mu sync.Mutex
	// found holds, by pod, the cgroup found for its sandbox (a sandbox
	// stays in its cgroup: see statsPod), so that each pod's is looked up
	// once per sandbox rather than at each snapshot (a stat of its path
	// on the hierarchy, 9 us a pod on this project's hosts), and the Pod
	// last listed, whose containers serve again while the same ones run.
	// Entries of pods not listed by the last call (whose gen they do not
	// have) are dropped. Guarded by mu.
	found map[types.UID]*foundPod
	gen   uint64
}

// PodListerDeps are what a PodLister reads.
type PodListerDeps struct {
	Pods    wantedPods
	Runtime runtimePods
	Cgroups podCgroups
}

// foundPod is a pod's cgroup as found for its sandbox, the Pod last
// listed (immutable: Containers is shared with the callers of
// StatsPods), and the gen of the last call that listed the pod.
type foundPod struct {
	sandbox, cgroup string
	last            Pod
	gen             uint64
}

// NewPodLister returns a PodLister of deps.
func NewPodLister(deps PodListerDeps) *PodLister {
	return &PodLister{deps: deps, found: map[types.UID]*foundPod{}}
}

var _ podSource = (*PodLister)(nil)

// StatsPods implements podSource.
func (l *PodLister) StatsPods() []Pod {
	l.mu.Lock()
	l.gen++
	gen := l.gen
	l.mu.Unlock()
	pods := l.deps.Pods.List()
	out := make([]Pod, 0, len(pods))
	for _, pod := range pods {
		st, _ := l.deps.Runtime.Get(pod.UID)
		if st == nil {
			continue
		}
		var sb *runtimeapi.PodSandboxStatus
		for _, candidate := range st.Sandboxes { // newest first
			if candidate.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				sb = candidate
				break
			}
		}
		if sb == nil {
			continue
		}
		out = append(out, l.statsPod(pod, st, sb, gen))
	}
	l.mu.Lock()
	if l.gen == gen { // else a later call prunes
		for uid, f := range l.found {
			if f.gen != gen {
				delete(l.found, uid)
			}
		}
	}
	l.mu.Unlock()
	return out
}

func (l *PodLister) statsPod(pod *v1.Pod, st *kubecontainer.PodStatus, sb *runtimeapi.PodSandboxStatus, gen uint64) Pod {
	sp := Pod{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
		StartTime:   time.Unix(0, sb.GetCreatedAt()),
		HostNetwork: pod.Spec.HostNetwork,
	}
	// The pod's cgroup is looked up rather than derived from its spec: a
	// sandbox stays in the QoS cgroup it was made in. Once found for a
	// sandbox, it is that sandbox's for as long as it lives (a cgroup
	// removed meanwhile reads as gone; one not found is looked up again
	// at the next call).
	l.mu.Lock()
	f := l.found[pod.UID]
	if f != nil && f.sandbox == sb.GetId() {
		f.gen = gen
	} else {
		f = nil
	}
	l.mu.Unlock()
	if f != nil {
		sp.Cgroup, sp.SandboxCgroup = f.cgroup, f.last.SandboxCgroup
		if sameContainers(f.last.Containers, st, sb.GetId()) {
			sp.Containers = f.last.Containers
			return sp
		}
	} else if p, ok := l.deps.Cgroups.FindPodCgroupOf(pod); ok {
		sp.Cgroup = p
		sp.SandboxCgroup = l.deps.Cgroups.ContainerCgroup(p, sb.GetId())
	} else {
		sp.SandboxCgroup = l.deps.Cgroups.ContainerCgroup(l.deps.Cgroups.PodCgroupParent(pod), sb.GetId())
	}
	parent := sp.Cgroup
	if parent == "" {
		parent = l.deps.Cgroups.PodCgroupParent(pod)
	}
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.SandboxID != sb.GetId() {
			continue
		}
		sp.Containers = append(sp.Containers, Container{
			Name: c.Name, ID: c.ID, Image: c.Image, StartTime: c.CreatedAt,
			Cgroup: l.deps.Cgroups.ContainerCgroup(parent, c.ID),
		})
	}
	if sp.Cgroup != "" {
		l.mu.Lock()
		l.found[pod.UID] = &foundPod{sandbox: sb.GetId(), cgroup: sp.Cgroup, last: sp, gen: gen}
		l.mu.Unlock()
	}
	return sp
}

// sameContainers reports whether cs are the running containers of the
// sandbox with id in st, in st's order, with the same names, images and
// creation times.
func sameContainers(cs []Container, st *kubecontainer.PodStatus, sandbox string) bool {
	i := 0
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.SandboxID != sandbox {
			continue
		}
		if i == len(cs) || cs[i].ID != c.ID || cs[i].Name != c.Name || cs[i].Image != c.Image || !cs[i].StartTime.Equal(c.CreatedAt) {
			return false
		}
		i++
	}
	return i == len(cs)
}
