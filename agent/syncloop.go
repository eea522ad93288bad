package agent

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/admission"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/housekeeping"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/agent/shutdown"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/memtrim"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
)

const (
	// syncTickPeriod is how often pods due for a periodic sync are woken.
	syncTickPeriod = time.Second
	// housekeepingPeriod is how often state of gone pods is cleaned up.
	housekeepingPeriod = 2 * time.Second
)

// syncLoop is the one place where everything that can change a pod meets:
// the merged sources' operations, PLEG events, probe results, graceful
// shutdown's and the eviction manager's requests, and the sync and
// housekeeping ticks. It only
// dispatches (DESIGN.md rule 1): every branch records state in memory and
// hands work to pod workers, never calling the runtime. Built by
// newRuntimeParts; run calls it on Run's goroutine, the only one that
// touches its state.
type syncLoop struct {
	clock clock.WithTicker
	// beat records each turn (health.beat).
	beat    func()
	pods    *podmanager.Manager
	merger  *podconfig.Merger
	cache   *pleg.Cache
	workers *podworkers.Workers
	probes  *prober.Manager
	// statuses is the status manager: start times for the pods'
	// activeDeadlineSeconds, and the terminal statuses the agent sets.
	statuses podStatuses
	pleg     plegEvents
	// probeResults is written by the prober (capacity probeResultsCap).
	probeResults <-chan prober.Result
	// shutdown is nil when graceful node shutdown is off.
	shutdown *shutdown.NodePods
	// evictions are the eviction manager's requests (evictions.go).
	evictions <-chan eviction.Request
	usage     housekeeping.Usage
	orphans   *housekeeping.Orphans
	podDirs   *housekeeping.PodDirs
	// admission decides on each pod added (admit.go); events records its
	// refusals and rejected counts them by reason.
	admission admission.Chain
	events    eventRecorder
	rejected  func(reason string)
	// activity is noted at each PLEG event (nil notes nothing).
	activity *memtrim.Activity
}

// podStatuses is what the syncLoop needs of the status manager.
type podStatuses interface {
	Get(uid types.UID) (v1.PodStatus, bool)
	SetTerminal(uid types.UID, t status.Terminal)
	// Reject reports pod refused at admission.
	Reject(pod *v1.Pod, reason, message string)
	IsTerminal(uid types.UID) bool
	Forget(uid types.UID)
	// ForgetTerminal drops the terminal statuses of pods for which keep
	// is false.
	ForgetTerminal(keep func(types.UID) bool)
}

// plegEvents is what the syncLoop needs of the PLEG.
type plegEvents interface {
	Watch() <-chan *pleg.Event
	LastSeen() time.Time
}

// run dispatches until ctx is done; updates are the merge's operations.
func (l *syncLoop) run(ctx context.Context, updates <-chan podconfig.PodUpdate) {
	logger := klog.FromContext(ctx).WithName("syncloop")
	syncTicker := l.clock.NewTicker(syncTickPeriod)
	defer syncTicker.Stop()
	housekeepingTicker := l.clock.NewTicker(housekeepingPeriod)
	defer housekeepingTicker.Stop()
	plegCh := l.pleg.Watch()
	for {
		l.beat()
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			l.handlePodUpdate(ctx, logger, u)
		case e := <-plegCh:
			l.handlePLEGEvent(ctx, logger, e)
		case r := <-l.probeResults:
			l.handleProbeResult(ctx, logger, r)
		case r := <-l.shutdown.Requests():
			l.shutdown.Handle(ctx, logger, r)
		case r := <-l.evictions:
			l.handleEviction(ctx, logger, r)
		case <-syncTicker.C():
			l.endPastDeadline(ctx, logger)
			l.workers.ResyncDue()
		case <-housekeepingTicker.C():
			l.forgetGonePods()
			l.killOrphans(ctx, logger)
			l.killRefusedLeftovers(ctx, logger)
			l.requestPodDirsCleanup()
		}
	}
}

func (l *syncLoop) handlePodUpdate(ctx context.Context, logger klog.Logger, u podconfig.PodUpdate) {
	pods := u.Pods
	if u.Op == podconfig.ADD {
		pods = byCreation(pods)
	}
	for _, pod := range pods {
		logPodUpdate(logger, u, pod)
		switch u.Op {
		case podconfig.ADD:
			l.pods.Set(pod)
			if pod.DeletionTimestamp != nil {
				// An API pod already being deleted when first seen (the
				// agent restarted meanwhile): only terminate it.
				l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: pod.DeletionGracePeriodSeconds})
				continue
			}
			if !l.admit(logger, pod) {
				continue
			}
			l.probes.AddPod(ctx, pod)
			l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: pod})
		case podconfig.UPDATE:
			l.pods.Set(pod)
			if pod.DeletionTimestamp != nil {
				// A pod being deleted whose deletion changed (a shorter
				// grace): keep terminating it, with the new grace.
				l.probes.StopLivenessAndStartup(pod.UID)
				l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: pod.DeletionGracePeriodSeconds})
				continue
			}
			if l.statuses.IsTerminal(pod.UID) {
				// Ended by the agent (past its deadline): as with the
				// kubelet, an ended pod is not started again by an
				// update, only when it is added anew.
				logger.V(2).Info("Pod updated after the agent ended it; it stays ended", "pod", klog.KObj(pod), "podUID", pod.UID)
				continue
			}
			l.probes.AddPod(ctx, pod)
			l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Update, Pod: pod})
		case podconfig.DELETE:
			l.pods.Set(pod)
			l.probes.StopLivenessAndStartup(pod.UID)
			if l.endedAndGone(pod.UID) {
				// Refused (or ended) and gone: nothing to terminate; node
				// mode deletes it from the API as it is.
				continue
			}
			l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: pod.DeletionGracePeriodSeconds})
		case podconfig.REMOVE:
			l.pods.Remove(pod.UID)
			gone := l.endedAndGone(pod.UID)
			// A pod added again under this UID starts afresh.
			l.statuses.Forget(pod.UID)
			l.probes.RemovePod(pod.UID)
			if !gone {
				l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
			}
		case podconfig.RECONCILE:
			l.pods.Set(pod)
			if l.mayStart(pod) && status.NeedsReadinessSync(pod) {
				// A condition of a readiness gate changed in the API:
				// the worker recomputes Ready from the new status, as
				// the kubelet's HandlePodReconcile does.
				l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, Pod: pod})
			}
		}
	}
}

// handlePLEGEvent wakes the worker of a pod the node runs. Events for pods
// the sources do not know are left to the worker that is terminating them,
// if any.
func (l *syncLoop) handlePLEGEvent(ctx context.Context, logger klog.Logger, e *pleg.Event) {
	l.activity.Note()
	pod := l.pods.Get(e.ID)
	if !l.mayStart(pod) {
		// Wake only a worker that exists, never start one (that would
		// run the pod again).
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, UID: e.ID, MinCacheTime: e.Time})
		return
	}
	logger.V(4).Info("PLEG event", "pod", klog.KObj(pod), "event", e.Type, "id", e.Data)
	l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, Pod: pod, MinCacheTime: e.Time})
}

// mayStart reports whether a worker may be started for pod: it is known,
// not an API pod being deleted (it stays known until the API lets go of
// it), and not a pod the agent ended (past its deadline).
func (l *syncLoop) mayStart(pod *v1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp == nil && !l.statuses.IsTerminal(pod.UID)
}

// handleProbeResult wakes the worker of the probed pod, which acts on the
// result at its sync.
func (l *syncLoop) handleProbeResult(ctx context.Context, logger klog.Logger, r prober.Result) {
	pod := l.pods.Get(r.PodUID)
	if !l.mayStart(pod) {
		return
	}
	logger.V(2).Info("Probe result changed", "pod", klog.KObj(pod), "container", r.ContainerName, "containerID", r.ContainerID, "probe", r.Type, "success", r.Success)
	l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, Pod: pod})
}

// forgetGonePods forgets the cached state of pods that neither the sources
// nor any worker know any more and of which the runtime holds nothing.
func (l *syncLoop) forgetGonePods() {
	known := l.usage.Known()
	l.probes.CleanupPods(func(uid types.UID) bool { return known[uid] })
	l.statuses.ForgetTerminal(func(uid types.UID) bool { return known[uid] })
	l.cache.Forget(func(uid types.UID, st *kubecontainer.PodStatus) bool {
		return !known[uid] && (st == nil || len(st.Sandboxes)+len(st.Containers) == 0)
	})
}

// killOrphans terminates, through their workers, the pods this node's
// agent started that no source wants any more (housekeeping.Orphans).
func (l *syncLoop) killOrphans(ctx context.Context, logger klog.Logger) {
	for _, pod := range l.orphans.Find() {
		logger.Info("Terminating a pod no source wants any more", "pod", klog.KObj(pod), "podUID", pod.UID,
			"origin", pod.Annotations[manifest.AnnotationConfigOrigin])
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
	}
}

// requestPodDirsCleanup asks for the housekeeping of pod directories once
// the agent knows what it needs: every source has sent its pods and the
// PLEG has seen the runtime (a pod still running must keep its volumes).
// It only hands the work over.
func (l *syncLoop) requestPodDirsCleanup() {
	if !l.merger.AllSourcesSeen() || l.pleg.LastSeen().IsZero() {
		return
	}
	l.podDirs.Request()
}

// logPodUpdate says what a source asked of pod, once per pod and
// operation, at the default verbosity: with the pod, its source and, for a
// static pod, the manifest it came from. RECONCILE (a status change of an
// API pod) is for debugging.
func logPodUpdate(logger klog.Logger, u podconfig.PodUpdate, pod *v1.Pod) {
	kv := []any{"pod", klog.KObj(pod), "podUID", pod.UID, "source", u.Source}
	if origin := pod.Annotations[manifest.AnnotationConfigOrigin]; origin != "" {
		kv = append(kv, "origin", origin)
	}
	switch u.Op {
	case podconfig.ADD:
		logger.Info("Pod added", kv...)
	case podconfig.UPDATE:
		logger.Info("Pod updated", kv...)
	case podconfig.DELETE:
		if g := pod.DeletionGracePeriodSeconds; g != nil {
			kv = append(kv, "gracePeriod", *g)
		}
		logger.Info("Pod deleted", kv...)
	case podconfig.REMOVE:
		logger.Info("Pod removed", kv...)
	default:
		logger.V(4).Info("Pod update", append(kv, "op", u.Op.String())...)
	}
}

// deadlineExceeded is how the kubelet ends a pod that ran past its
// spec.activeDeadlineSeconds: phase Failed with this reason and message.
var deadlineExceeded = status.Terminal{
	Reason:  "DeadlineExceeded",
	Message: "Pod was active on the node longer than the specified deadline",
}

// endPastDeadline terminates the pods that have been active on the node
// longer than their spec.activeDeadlineSeconds, counted from the status's
// start time, as the kubelet's active deadline handler does (static pods
// too): the pod gets phase Failed, reason DeadlineExceeded, and its
// containers are killed with the pod's grace period. Checked on every
// sync tick, so a pod ends within a second of its deadline; an update
// of the deadline counts from the same start.
func (l *syncLoop) endPastDeadline(ctx context.Context, logger klog.Logger) {
	now := l.clock.Now()
	for _, pod := range l.pods.List() {
		d := pod.Spec.ActiveDeadlineSeconds
		if d == nil || pod.DeletionTimestamp != nil {
			continue
		}
		st, ok := l.statuses.Get(pod.UID)
		if !ok || st.StartTime == nil || st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
			continue
		}
		if now.Sub(st.StartTime.Time) < time.Duration(*d)*time.Second {
			continue
		}
		logger.Info("Pod was active on the node longer than its activeDeadlineSeconds; killing it",
			"pod", klog.KObj(pod), "podUID", pod.UID, "activeDeadlineSeconds", *d, "startTime", st.StartTime.Time)
		l.statuses.SetTerminal(pod.UID, deadlineExceeded)
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
	}
}
