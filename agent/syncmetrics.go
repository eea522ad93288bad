package agent

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/metrics"
	"github.com/minikubelet/minikubelet/podworkers"
)

// podSyncer is the pod workers' syncer, as the metrics wrap it.
type podSyncer interface {
	SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (podworkers.SyncResult, error)
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error)
}

// podPhases tells a pod's phase as last generated.
type podPhases interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

// measuredSyncer times the pod syncs for the kubelet's
// kubelet_pod_worker_duration_seconds (operation_type create for a pod's
// first sync, sync for the later ones, kill for stopping it) and
// kubelet_pod_start_duration_seconds (once per pod: from the agent first
// seeing it, its config.seen annotation, to the sync after which it is
// Running).
type measuredSyncer struct {
	podSyncer
	metrics  *metrics.Metrics
	statuses podPhases
	clock    clock.PassiveClock

	mu sync.Mutex
	// synced holds the pods synced once; started those whose start was
	// observed (or that were running when first synced, as after an agent
	// restart). Both are forgotten when the pod is removed.
	synced, started map[types.UID]bool
}

func newMeasuredSyncer(s podSyncer, m *metrics.Metrics, statuses podPhases, clk clock.PassiveClock) *measuredSyncer {
	return &measuredSyncer{podSyncer: s, metrics: m, statuses: statuses, clock: clk, synced: map[types.UID]bool{}, started: map[types.UID]bool{}}
}

func (s *measuredSyncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	s.mu.Lock()
	op := "sync"
	if !s.synced[pod.UID] {
		op = "create"
		s.synced[pod.UID] = true
		// Already running when first synced: started before this agent.
		s.started[pod.UID] = s.running(pod.UID)
	}
	s.mu.Unlock()

	start := s.clock.Now()
	res, err := s.podSyncer.SyncPod(ctx, pod, status)
	s.metrics.PodWorkerDuration.WithLabelValues(op).Observe(s.clock.Since(start).Seconds())

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started[pod.UID] && s.running(pod.UID) {
		s.started[pod.UID] = true
		if seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[manifest.AnnotationConfigSeen]); err == nil {
			s.metrics.PodStartDuration.Observe(s.clock.Since(seen).Seconds())
		}
	}
	return res, err
}

func (s *measuredSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (podworkers.SyncResult, error) {
	start := s.clock.Now()
	res, err := s.podSyncer.SyncTerminatingPod(ctx, pod, status, gracePeriod)
	s.metrics.PodWorkerDuration.WithLabelValues("kill").Observe(s.clock.Since(start).Seconds())
	return res, err
}

func (s *measuredSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	res, err := s.podSyncer.SyncTerminatedPod(ctx, pod, status)
	if err == nil {
		s.mu.Lock()
		delete(s.synced, pod.UID)
		delete(s.started, pod.UID)
		s.mu.Unlock()
	}
	return res, err
}

// running reports whether the pod's last generated status is Running.
func (s *measuredSyncer) running(uid types.UID) bool {
	st, ok := s.statuses.Get(uid)
	return ok && st.Phase == v1.PodRunning
}
