package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/podworkers"
)

// killOrphans terminates, through their workers, the pods this node's
// agent started that no source wants any more: their manifest was deleted
// while the agent was down. It touches nothing until every configured
// source has sent a complete set of pods (a slow source's pods are not
// orphans), leaves alone every pod not labelled with this node's name (it
// does not own them), and keeps a pod whose manifest is refused right now
// (DESIGN.md rule 5: a bad edit never stops what runs). It reads only the
// PLEG cache and hands the work to pod workers: it is a syncLoop step.
func (a *Agent) killOrphans(ctx context.Context, logger klog.Logger) {
	if !a.merger.AllSourcesSeen() {
		return
	}
	refused := map[string]bool{}
	for _, e := range a.merger.Errors() {
		refused[e.Origin] = true
	}
	busy := map[types.UID]bool{}
	for _, uid := range a.workers.Known() {
		busy[uid] = true
	}
	var orphans []*v1.Pod
	a.cache.ForEach(func(uid types.UID, st *kubecontainer.PodStatus) {
		if busy[uid] || a.pods.Get(uid) != nil || len(st.Sandboxes) == 0 {
			return
		}
		sb := st.Sandboxes[0]
		if sb.Labels[kubecontainer.LabelNode] != a.nodeName {
			return
		}
		if refused[sb.Annotations[manifest.AnnotationConfigOrigin]] {
			return
		}
		orphans = append(orphans, orphanPod(uid, sb, st))
	})
	for _, pod := range orphans {
		logger.Info("Terminating a pod no source wants any more", "pod", klog.KObj(pod), "podUID", pod.UID,
			"origin", pod.Annotations[manifest.AnnotationConfigOrigin])
		a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
	}
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
