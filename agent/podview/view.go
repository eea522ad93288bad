package podview

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// wantedPods are the pods the sources want (agent/podmanager).
type wantedPods interface {
	List() []*v1.Pod
}

// statusSource is the status manager (agent/status); before it exists, it
// has no status for any pod.
type statusSource interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

// runtimePods is what the runtime holds, as the PLEG cache last saw it.
type runtimePods interface {
	Get(uid types.UID) (*kubecontainer.PodStatus, error)
	ForEach(f func(uid types.UID, st *kubecontainer.PodStatus))
}

// Config says where a View reads. Every field is required.
type Config struct {
	Pods     wantedPods
	Statuses statusSource
	Runtime  runtimePods
}

// View answers the HTTP endpoints' questions about the node's pods. Safe
// for concurrent use as far as its Config's parts are.
type View struct {
	cfg Config
}

// New returns a View.
func New(cfg Config) *View { return &View{cfg: cfg} }

// PodsWithStatus returns the node's pods with their current status, for
// /pods: a pod without one yet is Pending. Each pod is a shallow copy the
// caller may keep: its own fields (the status among them) are the
// caller's, but the maps, slices and pointers in them are the pod
// manager's and the status manager's, which never change them (they
// replace them), and must not be modified. Deep copies of every pod and
// status were most of the cost of a /pods poll.
func (v *View) PodsWithStatus() []*v1.Pod {
	pods := v.cfg.Pods.List()
	out := make([]*v1.Pod, 0, len(pods))
	copies := make([]v1.Pod, len(pods))
	for i, p := range pods {
		cp := &copies[i]
		*cp = *p
		if st, ok := v.cfg.Statuses.Get(p.UID); ok {
			cp.Status = st
		}
		if cp.Status.Phase == "" {
			cp.Status.Phase = v1.PodPending
		}
		out = append(out, cp)
	}
	return out
}

// ContainerLog finds the log file of a container of a pod the node runs,
// for /containerLogs, choosing the instance as the kubelet does from the
// pod's status: the current one is the running or terminated container,
// or, while it waits to restart, the one that last terminated; the
// previous one is its lastState.
func (v *View) ContainerLog(namespace, name, container string, previous bool) (server.LogFile, error) {
	var pod *v1.Pod
	for _, p := range v.cfg.Pods.List() {
		if p.Namespace == namespace && p.Name == name {
			pod = p
			break
		}
	}
	if pod == nil {
		return server.LogFile{}, fmt.Errorf("pod %s/%s: %w", namespace, name, server.ErrNotFound)
	}
	if kubecontainer.SpecOf(pod, container) == nil {
		return server.LogFile{}, fmt.Errorf("container %q is not valid for pod %s: %w", container, name, server.ErrNotFound)
	}
	var api *v1.ContainerStatus
	if st, ok := v.cfg.Statuses.Get(pod.UID); ok {
		api = findContainerStatus(st, container)
	}
	var apiID string
	switch last := lastTerminated(api); {
	case api == nil:
	case previous:
		if last == nil {
			return server.LogFile{}, fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
		}
		apiID = last.ContainerID
	case api.State.Running != nil:
		apiID = api.ContainerID
	case api.State.Terminated != nil:
		apiID = api.State.Terminated.ContainerID
	case last != nil:
		apiID = last.ContainerID // waiting to restart: the last run's log
	}
	if apiID == "" {
		return server.LogFile{}, fmt.Errorf("container %q in pod %q is waiting to start", container, name)
	}
	id := apiID[strings.Index(apiID, "://")+3:]
	st, err := v.cfg.Runtime.Get(pod.UID)
	if err != nil {
		return server.LogFile{}, fmt.Errorf("status of pod %s: %w", name, err)
	}
	var cs *kubecontainer.ContainerStatus
	for _, c := range st.Containers {
		if c.ID == id {
			cs = c
		}
	}
	if cs == nil || !filepath.IsAbs(cs.LogPath) {
		return server.LogFile{}, fmt.Errorf("container %q (%s) in pod %q has no log file any more", container, id, name)
	}
	uid := pod.UID
	return server.LogFile{
		Path: cs.LogPath,
		Running: func() bool {
			st, err := v.cfg.Runtime.Get(uid)
			if err != nil {
				return true // unknown: keep following
			}
			for _, c := range st.Containers {
				if c.ID == id {
					return c.State == runtimeapi.ContainerState_CONTAINER_RUNNING
				}
			}
			return false
		},
	}, nil
}

func findContainerStatus(st v1.PodStatus, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func lastTerminated(cs *v1.ContainerStatus) *v1.ContainerStateTerminated {
	if cs == nil || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ContainerID == "" {
		return nil
	}
	return cs.LastTerminationState.Terminated
}

// RunningPods returns the pods the runtime runs for this agent, as the
// kubelet's /runningpods/ lists them: metadata and the running containers
// (name, image, ID), whatever the sources want.
func (v *View) RunningPods() []*v1.Pod {
	var out []*v1.Pod
	v.cfg.Runtime.ForEach(func(uid types.UID, st *kubecontainer.PodStatus) {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: st.Name, Namespace: st.Namespace, UID: uid}}
		for _, cs := range st.Containers {
			if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: cs.Name, Image: cs.Image})
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{Name: cs.Name, Image: cs.Image, ContainerID: "containerd://" + cs.ID})
			}
		}
		if len(pod.Spec.Containers) > 0 {
			out = append(out, pod)
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
