package notify

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/podworkers"
)

// podSyncer is the pod workers' syncer, as firstSyncs wraps it.
type podSyncer interface {
	SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (podworkers.SyncResult, error)
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error)
}

var _ podSyncer = (*podworkers.Syncer)(nil)

// FirstSyncs records which pods have been through a first SyncPod, until
// the Loop has sent READY=1. Safe for concurrent use.
type FirstSyncs struct {
	mu sync.Mutex
	// synced holds the UIDs of pods whose SyncPod returned, not cancelled;
	// nil once stopped.
	synced map[types.UID]bool
}

// NewFirstSyncs returns a FirstSyncs that records.
func NewFirstSyncs() *FirstSyncs {
	return &FirstSyncs{synced: map[types.UID]bool{}}
}

// Wrap returns s, recording each pod's SyncPod that returns before its
// context is cancelled; the pod workers get it as their syncer.
func (f *FirstSyncs) Wrap(s podSyncer) *RecordingSyncer {
	return &RecordingSyncer{podSyncer: s, rec: f}
}

// count returns how many of pods have been synced once.
func (f *FirstSyncs) count(pods []*v1.Pod) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range pods {
		if f.synced[p.UID] {
			n++
		}
	}
	return n
}

// stop ends the recording and forgets what was recorded.
func (f *FirstSyncs) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced = nil
}

func (f *FirstSyncs) record(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.synced != nil {
		f.synced[uid] = true
	}
}

// RecordingSyncer is a pod syncer whose SyncPods FirstSyncs records.
type RecordingSyncer struct {
	podSyncer
	rec *FirstSyncs
}

// SyncPod syncs the pod and records it, unless ctx was cancelled.
func (r *RecordingSyncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	res, err := r.podSyncer.SyncPod(ctx, pod, status)
	if ctx.Err() == nil {
		r.rec.record(pod.UID)
	}
	return res, err
}
