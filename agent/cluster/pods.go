package cluster

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
	apisource "github.com/minikubelet/minikubelet/agent/sources/api"
)

// staticPods returns the pods of the file and HTTP sources that are not
// being terminated: those that have mirror pods.
func staticPods(pods localPods) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods.List() {
		if p.Annotations[manifest.AnnotationConfigSource] == sources.API || p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// apiSource is the pod source's view of the API's pods
// (agent/sources/api).
type apiSource interface {
	PodByUID(uid types.UID) (*v1.Pod, bool)
	PodByName(namespace, name string) (*v1.Pod, bool)
	Pods() []*v1.Pod
}

var _ apiSource = (*apisource.Source)(nil)

// apiPods finds the API object of each of the node's pods for the status
// syncer: API pods by UID, static pods' mirrors by name.
type apiPods struct {
	pods   localPods
	source apiSource
}

func (p apiPods) APIPod(uid types.UID) (*v1.Pod, bool, bool) {
	if pod, ok := p.source.PodByUID(uid); ok {
		return pod, false, true
	}
	local := p.pods.Get(uid)
	if local == nil || local.Annotations[manifest.AnnotationConfigSource] == sources.API {
		return nil, false, false
	}
	mp, ok := p.source.PodByName(local.Namespace, local.Name)
	if !ok || mp.Annotations[manifest.AnnotationMirror] == "" {
		return nil, false, false
	}
	return mp, true, true
}

func (p apiPods) UIDs() []types.UID {
	var out []types.UID
	for _, pod := range p.pods.List() {
		out = append(out, pod.UID)
	}
	return out
}

func (p apiPods) Deleted() []types.UID {
	var out []types.UID
	for _, pod := range p.source.Pods() {
		if pod.DeletionTimestamp != nil && pod.Annotations[manifest.AnnotationMirror] == "" {
			out = append(out, pod.UID)
		}
	}
	return out
}
