package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
)

const (
	// syncTickPeriod is how often pods due for a periodic sync are woken.
	syncTickPeriod = time.Second
	// housekeepingPeriod is how often state of gone pods is cleaned up.
	housekeepingPeriod = 2 * time.Second
	// syncLoopStallThreshold is how long the loop may go without turning
	// before /healthz fails.
	syncLoopStallThreshold = 30 * time.Second
)

// syncLoop is the one place where everything that can change a pod meets.
// It only dispatches (DESIGN.md rule 1): every branch records state in
// memory and hands work to pod workers, never calling the runtime.
func (a *Agent) syncLoop(ctx context.Context, updates <-chan podconfig.PodUpdate, plegCh <-chan *pleg.Event, probeCh <-chan prober.Result) {
	logger := klog.FromContext(ctx).WithName("syncloop")
	syncTicker := a.clock.NewTicker(syncTickPeriod)
	defer syncTicker.Stop()
	housekeeping := a.clock.NewTicker(housekeepingPeriod)
	defer housekeeping.Stop()
	for {
		a.syncLoopTick.Store(a.clock.Now().UnixNano())
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			a.handlePodUpdate(ctx, logger, u)
		case e := <-plegCh:
			a.handlePLEGEvent(ctx, logger, e)
		case r := <-probeCh:
			a.handleProbeResult(ctx, logger, r)
		case r := <-a.nodeShutdown.Requests():
			a.nodeShutdown.Handle(ctx, logger, r)
		case <-syncTicker.C():
			a.workers.ResyncDue()
		case <-housekeeping.C():
			a.housekeeping()
			a.killOrphans(ctx, logger)
			a.requestPodDirsCleanup()
		}
	}
}

func (a *Agent) handlePodUpdate(ctx context.Context, logger klog.Logger, u podconfig.PodUpdate) {
	for _, pod := range u.Pods {
		logger.V(2).Info("Pod update", "op", u.Op.String(), "source", u.Source, "pod", klog.KObj(pod), "podUID", pod.UID)
		switch u.Op {
		case podconfig.ADD:
			a.pods.Set(pod)
			if pod.DeletionTimestamp != nil {
				// An API pod already being deleted when first seen (the
				// agent restarted meanwhile): only terminate it.
				a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: pod.DeletionGracePeriodSeconds})
				continue
			}
			a.probes.AddPod(ctx, pod)
			a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: pod})
		case podconfig.UPDATE:
			a.pods.Set(pod)
			if pod.DeletionTimestamp != nil {
				// A pod being deleted whose deletion changed (a shorter
				// grace): keep terminating it, with the new grace.
				a.probes.StopLivenessAndStartup(pod.UID)
				a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: pod.DeletionGracePeriodSeconds})
				continue
			}
			a.probes.AddPod(ctx, pod)
			a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Update, Pod: pod})
		case podconfig.DELETE:
			a.pods.Set(pod)
			a.probes.StopLivenessAndStartup(pod.UID)
			a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: pod.DeletionGracePeriodSeconds})
		case podconfig.REMOVE:
			a.pods.Remove(pod.UID)
			a.probes.RemovePod(pod.UID)
			a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
		case podconfig.RECONCILE:
			a.pods.Set(pod)
		}
	}
}

// handlePLEGEvent wakes the worker of a pod the node runs. Events for pods
// the sources do not know are left to the worker that is terminating them,
// if any.
func (a *Agent) handlePLEGEvent(ctx context.Context, logger klog.Logger, e *pleg.Event) {
	pod := a.pods.Get(e.ID)
	if pod == nil || pod.DeletionTimestamp != nil {
		// Unknown, or an API pod being deleted that stays known until
		// the API lets go of it: wake only a worker that exists, never
		// start one (that would run the pod again).
		a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, UID: e.ID, MinCacheTime: e.Time})
		return
	}
	logger.V(4).Info("PLEG event", "pod", klog.KObj(pod), "event", e.Type, "id", e.Data)
	a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, Pod: pod, MinCacheTime: e.Time})
}

// handleProbeResult wakes the worker of the probed pod, which acts on the
// result at its sync.
func (a *Agent) handleProbeResult(ctx context.Context, logger klog.Logger, r prober.Result) {
	pod := a.pods.Get(r.PodUID)
	if pod == nil || pod.DeletionTimestamp != nil {
		return
	}
	logger.V(2).Info("Probe result changed", "pod", klog.KObj(pod), "container", r.ContainerName, "containerID", r.ContainerID, "probe", r.Type, "success", r.Success)
	a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, Pod: pod})
}

// housekeeping forgets the cached state of pods that neither the sources
// nor any worker know any more and of which the runtime holds nothing.
func (a *Agent) housekeeping() {
	known := a.usage.Known()
	a.probes.CleanupPods(func(uid types.UID) bool { return known[uid] })
	a.cache.Forget(func(uid types.UID, st *kubecontainer.PodStatus) bool {
		return !known[uid] && (st == nil || len(st.Sandboxes)+len(st.Containers) == 0)
	})
}

// killOrphans terminates, through their workers, the pods this node's
// agent started that no source wants any more (housekeeping.Orphans).
func (a *Agent) killOrphans(ctx context.Context, logger klog.Logger) {
	for _, pod := range a.orphans.Find() {
		logger.Info("Terminating a pod no source wants any more", "pod", klog.KObj(pod), "podUID", pod.UID,
			"origin", pod.Annotations[manifest.AnnotationConfigOrigin])
		a.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
	}
}

// requestPodDirsCleanup asks for the housekeeping of pod directories once
// the agent knows what it needs: every source has sent its pods and the
// PLEG has seen the runtime (a pod still running must keep its volumes).
// It only hands the work over.
func (a *Agent) requestPodDirsCleanup() {
	p := a.pleg.Load()
	if a.podDirs == nil || !a.merger.AllSourcesSeen() || p == nil || p.LastSeen().IsZero() {
		return
	}
	a.podDirs.Request()
}
