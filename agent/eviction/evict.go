package eviction

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/qos"
)

// isStatic reports whether pod came from a static source (a manifest file
// or URL), not from an apiserver.
func isStatic(pod *v1.Pod) bool {
	src := kubecontainer.PodSource(pod)
	return src != "" && src != manifest.SourceAPI
}

// critical reports whether the pod is never evicted and always admitted:
// its priority is system-critical (by value or class name), or, with the
// kubelet's rule (Config.StaticPodsCritical), it is a static pod.
func (m *Manager) critical(pod *v1.Pod) bool {
	return qos.IsCriticalPriority(pod) || (m.cfg.StaticPodsCritical && isStatic(pod))
}

// evict has the syncLoop kill pod with grace seconds, as the kubelet's
// evictPod: the pod's event says why, its status becomes phase Failed,
// reason Evicted and msg. It reports false for a critical pod, which is
// never evicted, and for a pod the syncLoop no longer runs. signal labels
// the eviction in kubelet_evictions; a static pod evicted is started
// again once condition ("" for its own limits) has cleared.
func (m *Manager) evict(ctx context.Context, pod *v1.Pod, grace int64, msg string, annotations map[string]string, signal string, condition v1.NodeConditionType) bool {
	logger := klog.FromContext(ctx)
	if m.critical(pod) {
		logger.Info("Not evicting a critical pod", "pod", klog.KObj(pod), "podUID", pod.UID, "priority", qos.Priority(pod), "static", isStatic(pod))
		return false
	}
	m.cfg.Events.AnnotatedEventf(events.Pod(pod), annotations, v1.EventTypeWarning, Reason, "%s", msg)
	logger.Info("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "signal", signal, "gracePeriod", grace, "message", msg)
	if !m.ask(ctx, Request{Op: OpEvict, Pod: pod, GracePeriod: grace, Message: msg}) {
		logger.V(2).Info("Pod already gone or ending; not evicted", "pod", klog.KObj(pod), "podUID", pod.UID)
		return false
	}
	if m.cfg.OnEviction != nil {
		m.cfg.OnEviction(signal)
	}
	if isStatic(pod) {
		m.staticEvicted(pod, condition, false)
	}
	return true
}

// localStorageEviction evicts, with no grace, every pod over a local
// storage limit, as the kubelet does before it looks at the thresholds:
// an emptyDir over its sizeLimit, a pod over the sum of its containers'
// ephemeral-storage limits (writable layers, logs and local volumes), a
// container over its own (writable layer and logs).
func (m *Manager) localStorageEviction(ctx context.Context, pods []*v1.Pod, stats statsFunc) []*v1.Pod {
	var evicted []*v1.Pod
	for _, pod := range pods {
		s, ok := stats(pod)
		if !ok {
			continue
		}
		msg, signal := m.overLocalLimit(pod, s)
		if msg != "" && m.evict(ctx, pod, 0, msg, nil, signal, "") {
			evicted = append(evicted, pod)
		}
	}
	return evicted
}

// overLocalLimit says which local storage limit the pod is over, if any:
// the eviction message and the signal that labels it.
func (m *Manager) overLocalLimit(pod *v1.Pod, s statsapi.PodStats) (msg, signal string) {
	used := map[string]uint64{}
	for _, v := range s.VolumeStats {
		if v.UsedBytes != nil {
			used[v.Name] = *v.UsedBytes
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		u, ok := used[v.Name]
		if ok && resource.NewQuantity(int64(u), resource.BinarySI).Cmp(*v.EmptyDir.SizeLimit) > 0 {
			return fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String()), signalEmptyDirFsLimit
		}
	}
	if limit, declared := cgroups.PodLimit(pod, v1.ResourceEphemeralStorage); declared {
		var total int64
		if s.EphemeralStorage != nil && s.EphemeralStorage.UsedBytes != nil {
			total = int64(*s.EphemeralStorage.UsedBytes)
		}
		if resource.NewQuantity(total, resource.BinarySI).Cmp(limit) > 0 {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String()), signalEphemeralPodFsLimit
		}
	}
	limits := map[string]resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if l, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && !l.IsZero() {
			limits[c.Name] = l
		}
	}
	for _, c := range s.Containers {
		limit, ok := limits[c.Name]
		if !ok {
			continue
		}
		var u uint64
		if c.Logs != nil && c.Logs.UsedBytes != nil {
			u += *c.Logs.UsedBytes
		}
		if !*m.dedicatedImageFs && c.Rootfs != nil && c.Rootfs.UsedBytes != nil {
			u += *c.Rootfs.UsedBytes
		}
		if limit.Cmp(*resource.NewQuantity(int64(u), resource.BinarySI)) < 0 {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String()), signalEphemeralContainerFsLimit
		}
	}
	return "", ""
}

// reclaimNodeLevel frees what the node can without evicting a pod, for a
// disk signal: the dead containers of finished pods, then every unused
// image (with a dedicated image filesystem, only for its own signals). It
// reports whether every threshold is then met no more, minimum reclaim
// included.
func (m *Manager) reclaimNodeLevel(ctx context.Context, s Signal) bool {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable, SignalPIDAvailable:
		return false
	case SignalNodeFsAvailable, SignalNodeFsInodesFree:
		if *m.dedicatedImageFs {
			return false
		}
	}
	logger := klog.FromContext(ctx)
	m.retireFinished(ctx)
	if m.cfg.Images != nil {
		logger.Info("Removing unused images to reclaim disk", "signal", s)
		if err := m.cfg.Images.DeleteUnusedImages(ctx); err != nil {
			logger.Info("Removing unused images did not free all it wanted", "err", err)
		}
	}
	obs := observe(m.cfg.Stats.Summary(ctx, false))
	return len(thresholdsMet(m.cfg.Thresholds, obs, true)) == 0
}

// retireFinished has the syncLoop remove what is left of the pods that
// have finished (their dead containers, with their writable layers and
// logs, as the kubelet's container GC does under disk pressure), and
// waits for them to be gone.
func (m *Manager) retireFinished(ctx context.Context) {
	logger := klog.FromContext(ctx)
	var retired []*v1.Pod
	for _, pod := range m.cfg.Pods.Finished() {
		if m.ask(ctx, Request{Op: OpRetire, Pod: pod}) {
			logger.Info("Removing the dead containers of a finished pod to reclaim disk", "pod", klog.KObj(pod), "podUID", pod.UID)
			retired = append(retired, pod)
		}
	}
	if len(retired) > 0 {
		m.waitForCleanup(ctx, retired)
	}
}
