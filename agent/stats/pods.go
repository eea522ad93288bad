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
	// found holds the cgroup found of each pod, with the sandbox it was
	// found for (a sandbox stays in its cgroup: see statsPod), so that
	// each pod's is looked up once per sandbox rather than at each
	// snapshot (a stat of its path on the hierarchy, 9 us a pod on this
	// project's hosts). Entries of pods not listed by the last call
	// (whose gen they do not have) are dropped. Guarded by mu.
	found map[types.UID]foundCgroup
	gen   uint64
}

// PodListerDeps are what a PodLister reads.
type PodListerDeps struct {
	Pods    wantedPods
	Runtime runtimePods
	Cgroups podCgroups
}

// foundCgroup is a pod's cgroup as found for its sandbox, and the gen of
// the last call that listed the pod.
type foundCgroup struct {
	sandbox, cgroup string
	gen             uint64
}

// NewPodLister returns a PodLister of deps.
func NewPodLister(deps PodListerDeps) *PodLister {
	return &PodLister{deps: deps, found: map[types.UID]foundCgroup{}}
}

var _ podSource = (*PodLister)(nil)

// StatsPods implements podSource.
func (l *PodLister) StatsPods() []Pod {
	l.mu.Lock()
	l.gen++
	gen := l.gen
	l.mu.Unlock()
	var out []Pod
	for _, pod := range l.deps.Pods.List() {
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
	parent := ""
	l.mu.Lock()
	f, ok := l.found[pod.UID]
	if ok && f.sandbox == sb.GetId() {
		f.gen = gen
		l.found[pod.UID] = f
	}
	l.mu.Unlock()
	if ok && f.sandbox == sb.GetId() {
		sp.Cgroup, parent = f.cgroup, f.cgroup
	} else if p, ok := l.deps.Cgroups.FindPodCgroupOf(pod); ok {
		sp.Cgroup, parent = p, p
		l.mu.Lock()
		l.found[pod.UID] = foundCgroup{sandbox: sb.GetId(), cgroup: p, gen: gen}
		l.mu.Unlock()
	} else {
		parent = l.deps.Cgroups.PodCgroupParent(pod)
	}
	sp.SandboxCgroup = l.deps.Cgroups.ContainerCgroup(parent, sb.GetId())
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.SandboxID != sb.GetId() {
			continue
		}
		sp.Containers = append(sp.Containers, Container{
			Name: c.Name, ID: c.ID, Image: c.Image, StartTime: c.CreatedAt,
			Cgroup: l.deps.Cgroups.ContainerCgroup(parent, c.ID),
		})
	}
	return sp
}
