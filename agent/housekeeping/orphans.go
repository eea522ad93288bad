package housekeeping

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// sourcesState is what the merge (agent/podconfig) says of the sources.
type sourcesState interface {
	// AllSourcesSeen reports whether every configured source has sent a
	// complete set of pods.
	AllSourcesSeen() bool
	// Errors lists the manifests refused right now.
	Errors() []sources.ManifestError
}

// Orphans finds the pods this node's agent started that no source wants
// any more: their manifest was deleted while the agent was down.
type Orphans struct {
	cfg OrphansConfig
}

// OrphansConfig configures Orphans. Every field is required.
type OrphansConfig struct {
	// NodeName is this node's: pods labelled with another are not ours.
	NodeName string
	Sources  sourcesState
	// Runtime is the PLEG cache: what the runtime holds.
	Runtime runtimePods
	// Known returns the pods the sources want or a worker handles
	// (Usage.Known).
	Known func() map[types.UID]bool
}

// NewOrphans returns an Orphans finder.
func NewOrphans(cfg OrphansConfig) *Orphans { return &Orphans{cfg: cfg} }

// Find returns the pods to terminate, rebuilt from the runtime alone. It
// finds none until every configured source has sent a complete set of
// pods (a slow source's pods are not orphans), leaves alone every pod not
// labelled with this node's name (it does not own them), and keeps a pod
// whose manifest is refused right now (DESIGN.md rule 5: a bad edit never
// stops what runs). It reads only memory (the merge and the PLEG cache),
// so the syncLoop may call it and hand the pods to their workers.
func (o *Orphans) Find() []*v1.Pod {
	if !o.cfg.Sources.AllSourcesSeen() {
		return nil
	}
	refused := map[string]bool{}
	for _, e := range o.cfg.Sources.Errors() {
		refused[e.Origin] = true
	}
	known := o.cfg.Known()
	var orphans []*v1.Pod
	o.cfg.Runtime.ForEach(func(uid types.UID, st *kubecontainer.PodStatus) {
		if known[uid] || len(st.Sandboxes) == 0 {
			return
		}
		sb := st.Sandboxes[0]
		if sb.Labels[kubecontainer.LabelNode] != o.cfg.NodeName {
			return
		}
		if refused[sb.Annotations[manifest.AnnotationConfigOrigin]] {
			return
		}
		orphans = append(orphans, orphanPod(uid, sb, st))
	})
	return orphans
}

// orphanPod rebuilds what terminating a pod needs from the runtime alone:
// its identity and the grace period its containers were created with.
func orphanPod(uid types.UID, sb *runtimeapi.PodSandboxStatus, st *kubecontainer.PodStatus) *v1.Pod {
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	for _, c := range st.Containers {
		if c.PodTerminationGrace >= 0 {
			grace = c.PodTerminationGrace
			break // the newest container's
		}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        sb.GetMetadata().GetName(),
			Namespace:   sb.GetMetadata().GetNamespace(),
			UID:         uid,
			Annotations: sb.Annotations,
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
}
