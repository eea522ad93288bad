package podworkers

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// UpdateType says why a worker is asked to act.
type UpdateType int

// Update types.
const (
	// Sync re-evaluates the pod against the runtime.
	Sync UpdateType = iota
	// Create starts a pod new to the agent.
	Create
	// Update brings a pod to a new spec.
	Update
	// Kill terminates the pod: containers, then sandbox; then removes
	// them from the runtime.
	Kill
)

func (t UpdateType) String() string {
	switch t {
	case Create:
		return "create"
	case Update:
		return "update"
	case Kill:
		return "kill"
	default:
		return "sync"
	}
}

// UpdatePodOptions is one request to a pod's worker.
type UpdatePodOptions struct {
	Type UpdateType
	// Pod is the newest version of the pod. Required for Create and
	// Update; for Sync and Kill the worker's last version is used when nil.
	Pod *v1.Pod
	// UID names the pod when Pod is nil.
	UID types.UID
	// MinCacheTime: the worker syncs against a cache entry at least this
	// new (the time of the PLEG event that caused the request).
	MinCacheTime time.Time
	// GracePeriod overrides the pod's termination grace period for Kill.
	// Grace periods only shrink (DESIGN.md rule 4).
	GracePeriod *int64
}

// statusCache is the pod status cache workers sync against.
type statusCache interface {
	GetNewerThan(ctx context.Context, uid types.UID, min time.Time) (*kubecontainer.PodStatus, error)
}

// podSyncer does the runtime work for one pod. Calls for one UID never
// overlap. Each returns the timestamp of the newest status it read or wrote:
// the next sync of the pod runs against a status at least that new.
type podSyncer interface {
	// SyncPod brings the runtime in line with the pod's spec.
	SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error)
	// SyncTerminatingPod stops every container (gracePeriod seconds each)
	// and then every sandbox of the pod.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (SyncResult, error)
	// SyncTerminatedPod removes the pod's containers, sandboxes and files.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error)
}

// SyncResult is what a sync tells the worker.
type SyncResult struct {
	// StatusTime is the timestamp of the newest status the sync saw.
	StatusTime time.Time
	// RequeueAfter, when > 0, asks for another sync at most this much later
	// (for example when a restart backoff expires).
	RequeueAfter time.Duration
}

// Config configures Workers.
type Config struct {
	Syncer podSyncer
	Cache  statusCache
	Clock  clock.Clock
	// ResyncInterval is how often a synced pod is synced again without a
	// cause; each interval gets up to 50% jitter.
	ResyncInterval time.Duration
	// OnGone, if set, is called (from the pod's goroutine, without locks
	// held) once a terminated pod's worker is forgotten: the pod is gone
	// from the node, and node mode can delete it from the API at once.
	OnGone func(types.UID)
}

// Workers owns the per-pod goroutines. Its methods are safe for concurrent
// use; in the agent only the syncLoop calls them.
type Workers struct {
	cfg Config
	mu  sync.Mutex
	// pods holds a state for every pod with a live goroutine. Guarded by mu.
	pods map[types.UID]*podState
	// holdStarts is set while the node shuts down (see HoldStarts).
	// Guarded by mu.
	holdStarts bool
	wg         sync.WaitGroup
}

type phase int

const (
	syncing phase = iota
	terminating
	terminated
)

// podState is one pod's worker state; guarded by Workers.mu.
type podState struct {
	pod *v1.Pod
	// notify wakes the pod's goroutine; capacity 1 so that a burst of
	// updates collapses into one wake-up. Written by Workers under mu
	// without blocking, read only by the pod's goroutine, never closed.
	notify chan struct{}
	// minCacheTime is the newest MinCacheTime requested since the last sync.
	minCacheTime time.Time
	// Recorded timestamps; the phase is derived from them.
	terminatingAt time.Time
	terminatedAt  time.Time
	gracePeriod   int64
	// restartRequested: the pod was re-added while terminating; once it is
	// gone from the runtime the worker starts over as a new pod.
	restartRequested bool
	// cancel cancels the sync in flight, if any.
	cancel context.CancelFunc
	// nextSync is when the pod is due for a sync without a cause.
	nextSync time.Time
	failures int
}

func (s *podState) phase() phase {
	switch {
	case !s.terminatedAt.IsZero():
		return terminated
	case !s.terminatingAt.IsZero():
		return terminating
	default:
		return syncing
	}
}

// New returns Workers with no pods.
func New(cfg Config) *Workers {
	return &Workers{cfg: cfg, pods: make(map[types.UID]*podState)}
}

// UpdatePod hands a request to the pod's worker, starting the worker if the
// pod has none. It never blocks. ctx bounds the life of a worker started by
// this call. Requests for one pod are coalesced: the worker always acts on
// the newest pod version and the smallest grace period requested.
func (w *Workers) UpdatePod(ctx context.Context, opts UpdatePodOptions) {
	uid := podUID(opts)
	if uid == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.pods[uid]
	if !ok {
		if opts.Pod == nil {
			return // nothing known of this pod; nothing to do
		}
		if w.holdStarts && opts.Type != Kill {
			return // the node shuts down: no pod starts
		}
		st = &podState{pod: opts.Pod, notify: make(chan struct{}, 1)}
		w.pods[uid] = st
		w.wg.Add(1)
		go w.podLoop(ctx, uid, st)
	}
	if opts.Pod != nil {
		st.pod = opts.Pod
	}
	if opts.MinCacheTime.After(st.minCacheTime) {
		st.minCacheTime = opts.MinCacheTime
	}
	switch opts.Type {
	case Kill:
		w.requestKill(st, opts.GracePeriod)
	case Create:
		// Only a re-add starts a terminating pod over; an update of a pod
		// being terminated (a new deletion grace, say) does not.
		if st.phase() != syncing && !w.holdStarts {
			st.restartRequested = true
		}
	}
	wake(st)
}

// requestKill moves a pod to terminating, or shrinks the grace period of a
// termination under way. w.mu must be held.
func (w *Workers) requestKill(st *podState, override *int64) {
	grace := podGracePeriod(st.pod)
	if override != nil && *override < grace {
		grace = *override
	}
	if grace < 0 {
		grace = 0
	}
	st.restartRequested = false
	switch st.phase() {
	case syncing:
		st.terminatingAt = w.cfg.Clock.Now()
		st.gracePeriod = grace
		if st.cancel != nil {
			st.cancel() // a sync in flight must not outlive the kill
		}
	case terminating:
		if grace < st.gracePeriod {
			st.gracePeriod = grace
			if st.cancel != nil {
				st.cancel() // restart the kill with the shorter grace
			}
		}
	}
}

// ResyncDue asks every pod whose next sync time has come for a sync.
func (w *Workers) ResyncDue() {
	now := w.cfg.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.pods {
		if !st.nextSync.IsZero() && !now.Before(st.nextSync) {
			st.nextSync = time.Time{}
			wake(st)
		}
	}
}

// IsTerminating reports whether the pod's worker is terminating it or has
// terminated it and not yet let go of it.
func (w *Workers) IsTerminating(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.pods[uid]
	return ok && st.phase() != syncing
}

// HoldStarts says whether pods are kept from starting, as while the node
// shuts down. While held, UpdatePod starts a worker only to kill a pod, and
// a pod re-added while it terminates is not started again when it is gone;
// workers that run keep syncing their pods. Releasing the hold starts
// nothing by itself: the caller re-adds the pods it wants to run.
func (w *Workers) HoldStarts(hold bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holdStarts = hold
}

// IsTerminated reports whether the pod's worker has stopped every container
// and sandbox of the pod, or the pod has no worker at all.
func (w *Workers) IsTerminated(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.pods[uid]
	return !ok || st.phase() == terminated
}

// Known returns the UIDs of every pod that has a worker.
func (w *Workers) Known() []types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.UID, 0, len(w.pods))
	for uid := range w.pods {
		out = append(out, uid)
	}
	return out
}

// Wait blocks until every worker goroutine has ended; they end when the ctx
// given to UpdatePod is done or when their pod is gone.
func (w *Workers) Wait() { w.wg.Wait() }

func wake(st *podState) {
	select {
	case st.notify <- struct{}{}:
	default: // a wake-up is already pending; it will see this request
	}
}

// podLoop is the pod's goroutine.
func (w *Workers) podLoop(ctx context.Context, uid types.UID, st *podState) {
	defer w.wg.Done()
	logger := klog.FromContext(ctx).WithValues("podUID", uid)
	var lastSync time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.notify:
		}
		w.mu.Lock()
		pod, ph, grace := st.pod, st.phase(), st.gracePeriod
		minTime := lastSync
		if st.minCacheTime.After(minTime) {
			minTime = st.minCacheTime
		}
		opCtx, cancel := context.WithCancel(ctx)
		st.cancel = cancel
		w.mu.Unlock()

		logger := logger.WithValues("pod", klog.KObj(pod))
		if src := kubecontainer.PodSource(pod); src != "" {
			logger = logger.WithValues("source", src)
		}
		res, err := w.syncOnce(klog.NewContext(opCtx, logger), pod, ph, grace, minTime)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if !res.StatusTime.IsZero() && res.StatusTime.After(lastSync) {
			lastSync = res.StatusTime
		}
		if done := w.afterSync(uid, st, syncOutcome{phase: ph, result: res, err: err}, logger); done {
			if w.cfg.OnGone != nil {
				w.cfg.OnGone(uid)
			}
			return
		}
	}
}

func (w *Workers) syncOnce(ctx context.Context, pod *v1.Pod, ph phase, grace int64, minTime time.Time) (SyncResult, error) {
	status, err := w.cfg.Cache.GetNewerThan(ctx, pod.UID, minTime)
	if err != nil {
		return SyncResult{}, err
	}
	switch ph {
	case terminating:
		return w.cfg.Syncer.SyncTerminatingPod(ctx, pod, status, grace)
	case terminated:
		return w.cfg.Syncer.SyncTerminatedPod(ctx, pod, status)
	default:
		return w.cfg.Syncer.SyncPod(ctx, pod, status)
	}
}

// syncOutcome is what one sync of a phase came to.
type syncOutcome struct {
	phase  phase
	result SyncResult
	err    error
}

// afterSync records the outcome of a sync and decides what comes next. It
// reports true when the worker is done and its goroutine must end.
func (w *Workers) afterSync(uid types.UID, st *podState, out syncOutcome, logger klog.Logger) bool {
	ph, res, err := out.phase, out.result, out.err
	w.mu.Lock()
	defer w.mu.Unlock()
	st.cancel = nil
	now := w.cfg.Clock.Now()
	if err != nil {
		if errors.Is(err, context.Canceled) && st.phase() != ph {
			// Cancelled because the pod moved on (killed while
			// syncing): act on the new phase at once.
			wake(st)
			return false
		}
		if errors.Is(err, context.Canceled) && ph == terminating {
			// The grace period shrank: kill again with the new one.
			wake(st)
			return false
		}
		if ph == terminated && st.restartRequested {
			// The old pod's objects could not all be removed (containerd
			// can keep a task it cannot delete after an agent died during
			// a start). The re-added pod must not wait for them: as the
			// kubelet, start it afresh beside them, in a new sandbox
			// attempt; its syncs keep removing the stale ones.
			logger.Error(err, "Removing the pod's old objects failed; starting it again beside them")
			st.failures = 0
			st.restartRequested = false
			st.terminatingAt, st.terminatedAt = time.Time{}, time.Time{}
			st.gracePeriod = 0
			wake(st)
			return false
		}
		st.failures++
		delay := errorBackoff(st.failures)
		logger.Error(err, "Pod sync failed; will retry", "phase", ph.String(), "retryIn", delay)
		st.nextSync = now.Add(delay)
		return false
	}
	st.failures = 0
	switch ph {
	case syncing:
		next := w.cfg.ResyncInterval
		if next > 0 {
			next += time.Duration(rand.Int64N(int64(next)/2 + 1)) //nolint:gosec // G404: jitter needs no crypto
		}
		if res.RequeueAfter > 0 && (next <= 0 || res.RequeueAfter < next) {
			next = res.RequeueAfter
		}
		if next > 0 {
			st.nextSync = now.Add(next)
		}
	case terminating:
		st.terminatedAt = now
		wake(st)
	case terminated:
		if st.restartRequested {
			logger.V(2).Info("Pod was added again while terminating; starting it afresh")
			st.restartRequested = false
			st.terminatingAt, st.terminatedAt = time.Time{}, time.Time{}
			st.gracePeriod = 0
			wake(st)
			return false
		}
		delete(w.pods, uid)
		return true
	}
	return false
}

func (p phase) String() string {
	switch p {
	case terminating:
		return "terminating"
	case terminated:
		return "terminated"
	default:
		return "syncing"
	}
}

// errorBackoff is the delay before retrying a failed sync: 250ms doubling
// to at most 10s.
func errorBackoff(failures int) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < failures && d < 10*time.Second; i++ {
		d *= 2
	}
	return min(d, 10*time.Second)
}

func podUID(opts UpdatePodOptions) types.UID {
	if opts.Pod != nil {
		return opts.Pod.UID
	}
	return opts.UID
}

// podGracePeriod is the pod's own termination grace period in seconds:
// the deletion grace when set, else the spec's, else 30.
func podGracePeriod(pod *v1.Pod) int64 {
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds < grace {
		grace = *pod.DeletionGracePeriodSeconds
	}
	return grace
}
