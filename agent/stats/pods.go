package stats

import (
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
// cgroups. Every field is required; it is safe for concurrent use as far
// as they are.
type PodLister struct {
	Pods    wantedPods
	Runtime runtimePods
	Cgroups podCgroups
}

var _ podSource = PodLister{}

// StatsPods implements podSource.
func (l PodLister) StatsPods() []Pod {
	var out []Pod
	for _, pod := range l.Pods.List() {
		st, _ := l.Runtime.Get(pod.UID)
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
		out = append(out, l.statsPod(pod, st, sb))
	}
	return out
}

func (l PodLister) statsPod(pod *v1.Pod, st *kubecontainer.PodStatus, sb *runtimeapi.PodSandboxStatus) Pod {
	sp := Pod{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
		StartTime:   time.Unix(0, sb.GetCreatedAt()),
		HostNetwork: pod.Spec.HostNetwork,
	}
	// The pod's cgroup is looked up rather than derived from its spec: a
	// sandbox stays in the QoS cgroup it was made in.
	parent := l.Cgroups.PodCgroupParent(pod)
	if p, ok := l.Cgroups.FindPodCgroupOf(pod); ok {
		sp.Cgroup, parent = p, p
	}
	sp.SandboxCgroup = l.Cgroups.ContainerCgroup(parent, sb.GetId())
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.SandboxID != sb.GetId() {
			continue
		}
		sp.Containers = append(sp.Containers, Container{
			Name: c.Name, ID: c.ID, Image: c.Image, StartTime: c.CreatedAt,
			Cgroup: l.Cgroups.ContainerCgroup(parent, c.ID),
		})
	}
	return sp
}
