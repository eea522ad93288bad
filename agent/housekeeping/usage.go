package housekeeping

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// wantedPods are the pods the sources want (agent/podmanager).
type wantedPods interface {
	Get(uid types.UID) *v1.Pod
	List() []*v1.Pod
}

// workerSet are the pods that have a worker (podworkers).
type workerSet interface {
	Known() []types.UID
}

// runtimePods is what the runtime holds, as the PLEG cache last saw it.
type runtimePods interface {
	Get(uid types.UID) (*kubecontainer.PodStatus, error)
	ForEach(f func(uid types.UID, st *kubecontainer.PodStatus))
}

// Usage says which pods the node still uses, from three places: the
// sources' pods, the pod workers and the runtime. Safe for concurrent use
// as far as its parts are.
type Usage struct {
	Pods    wantedPods
	Workers workerSet
	Runtime runtimePods
}

// Known returns the pods the sources want or a worker handles.
func (u Usage) Known() map[types.UID]bool {
	known := map[types.UID]bool{}
	for _, uid := range u.Workers.Known() {
		known[uid] = true
	}
	for _, p := range u.Pods.List() {
		known[p.UID] = true
	}
	return known
}

// InUse returns the pods whose directories and cgroups must stay: those
// the sources want, those a worker handles, and those the runtime still
// holds anything of.
func (u Usage) InUse() map[types.UID]bool {
	in := u.Known()
	u.Runtime.ForEach(func(uid types.UID, st *kubecontainer.PodStatus) {
		if holds(st) {
			in[uid] = true
		}
	})
	return in
}

// Uses reports whether the pod uid is in use, as InUse, reading the
// present state of one pod.
func (u Usage) Uses(uid types.UID) bool {
	if u.Pods.Get(uid) != nil {
		return true
	}
	for _, known := range u.Workers.Known() {
		if known == uid {
			return true
		}
	}
	st, _ := u.Runtime.Get(uid)
	return holds(st)
}

// holds reports whether the runtime holds a sandbox or container of st's
// pod.
func holds(st *kubecontainer.PodStatus) bool {
	return st != nil && len(st.Sandboxes)+len(st.Containers) > 0
}
