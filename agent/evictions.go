package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/podworkers"
)

// evictionDeps are the runtime parts the eviction manager is built from.
type evictionDeps struct {
	statsConfig stats.Config
	cgroups     *cgroups.Manager
	workers     *podworkers.Workers
	statuses    *status.Manager
	images      imageReclaimer
	clients     *cri.Clients
	// thresholds are the eviction thresholds (nodeAllocatable's).
	thresholds []eviction.Threshold
}

// imageReclaimer is image GC's removal of every unused image.
type imageReclaimer interface {
	DeleteUnusedImages(ctx context.Context) error
}

// newEviction builds the eviction manager (agent/eviction). It reads a
// Summary of its own, never older than the call, filesystems included
// (the endpoints' is up to a second old, their filesystem figures up to
// FsMaxAge and read in the background), through cgroup files of its own
// (a StatsFiles is not safe for concurrent use).
func newEviction(b *baseParts, d evictionDeps) *eviction.Manager {
	statsConfig := d.statsConfig
	statsConfig.MaxAge = time.Nanosecond
	statsConfig.FsMaxAge = time.Nanosecond
	statsConfig.Files = d.cgroups.NewStatsFiles()
	cfg := eviction.Config{
		Thresholds:               d.thresholds,
		MaxPodGracePeriod:        int64(b.cfg.EvictionMaxPodGracePeriod),
		PressureTransitionPeriod: b.cfg.EvictionPressureTransitionPeriod,
		MonitoringPeriod:         b.cfg.EvictionMonitoringPeriod,
		LocalStorageLimits:       b.cfg.LocalStorageCapacityIsolation,
		StaticPodsCritical:       !b.cfg.EvictStaticPods,
		DedicatedImageFs:         dedicatedImageFs(d.clients.Images, b.cfg.RootDir),
		PodsCgroup:               d.cgroups.PodsCgroup(),
		Stats:                    stats.New(statsConfig),
		Pods:                     evictionPods{pods: b.pods, workers: d.workers, statuses: d.statuses},
		Images:                   d.images,
		NodeName:                 b.nodeName,
		OnEviction:               func(signal string) { b.metrics.Evictions.WithLabelValues(signal).Inc() },
		Clock:                    b.clock,
	}
	if b.cfg.KernelMemcgNotification {
		cfg.Notifications = eviction.CgroupNotifications{MountRoot: cgroups.DefaultMountRoot, Version: d.cgroups.Version()}
	}
	if b.cluster != nil {
		cfg.Events = b.cluster.Events()
	}
	return eviction.New(cfg)
}

// imageFsInfo is the CRI call that names the image filesystem.
type imageFsInfo interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// dedicatedImageFs reports whether the runtime's image filesystem is on
// another device than rootDir.
func dedicatedImageFs(images imageFsInfo, rootDir string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		resp, err := images.ImageFsInfo(ctx)
		if err != nil {
			return false, fmt.Errorf("image filesystem: %w", err)
		}
		fss := resp.GetImageFilesystems()
		if len(fss) == 0 {
			return false, errors.New("the runtime names no image filesystem")
		}
		var root, img syscall.Stat_t
		if err := statExisting(rootDir, &root); err != nil {
			return false, fmt.Errorf("stat %s: %w", rootDir, err)
		}
		mp := fss[0].GetFsId().GetMountpoint()
		if err := syscall.Stat(mp, &img); err != nil {
			return false, fmt.Errorf("stat the image filesystem %s: %w", mp, err)
		}
		return root.Dev != img.Dev, nil
	}
}

// statExisting stats dir or, when it does not exist yet, its nearest
// existing parent.
func statExisting(dir string, st *syscall.Stat_t) error {
	for {
		err := syscall.Stat(dir, st)
		parent := filepath.Dir(dir)
		if !errors.Is(err, syscall.ENOENT) || parent == dir {
			return err
		}
		dir = parent
	}
}

// evictionPods is the eviction manager's view of the node's pods
// (eviction.Config.Pods): the pods the sources want, their workers and
// their statuses. Safe for concurrent use.
type evictionPods struct {
	pods     *podmanager.Manager
	workers  *podworkers.Workers
	statuses *status.Manager
}

// ActivePods are the pods admitted and not done, as the kubelet's active
// pods: with a worker that syncs them (not terminating), not ended by the
// agent, and not finished (a pod not synced yet has no status: it is
// active).
func (e evictionPods) ActivePods() []*v1.Pod {
	return e.withStatus(func(st v1.PodStatus, ok bool) bool { return !ok || !finished(st) })
}

// Finished are the pods whose status has finished (phase Succeeded or
// Failed on their own, not ended by the agent) and whose worker still
// holds their containers.
func (e evictionPods) Finished() []*v1.Pod {
	return e.withStatus(func(st v1.PodStatus, ok bool) bool { return ok && finished(st) })
}

func finished(st v1.PodStatus) bool {
	return st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed
}

// withStatus returns the pods with a syncing worker, not ended by the
// agent, whose status (ok: there is one) is what want wants.
func (e evictionPods) withStatus(want func(st v1.PodStatus, ok bool) bool) []*v1.Pod {
	known := map[types.UID]bool{}
	for _, uid := range e.workers.Known() {
		known[uid] = true
	}
	var out []*v1.Pod
	for _, pod := range e.pods.List() {
		if pod.DeletionTimestamp != nil || !known[pod.UID] || e.workers.IsTerminating(pod.UID) || e.statuses.IsTerminal(pod.UID) {
			continue
		}
		if want(e.statuses.Get(pod.UID)) {
			out = append(out, pod)
		}
	}
	return out
}

// Get returns the pod the sources want with uid, or nil.
func (e evictionPods) Get(uid types.UID) *v1.Pod { return e.pods.Get(uid) }

// Gone reports whether the pod has no worker any more: its worker removed
// its containers, sandboxes, volumes and cgroup before it ended.
func (e evictionPods) Gone(uid types.UID) bool {
	return !slices.Contains(e.workers.Known(), uid)
}

// evicted is how the agent ends a pod the eviction manager evicts: phase
// Failed, reason Evicted, with the DisruptionTarget condition.
func evicted(message string) status.Terminal {
	return status.Terminal{Reason: eviction.Reason, Message: message, DisruptionTarget: true}
}

// handleEviction carries out a request of the eviction manager and
// answers it (eviction.Request).
func (l *syncLoop) handleEviction(ctx context.Context, logger klog.Logger, r eviction.Request) {
	pod := l.pods.Get(r.Pod.UID)
	switch r.Op {
	case eviction.OpEvict:
		if !l.mayStart(pod) || l.workers.IsTerminating(pod.UID) {
			r.Done(false)
			return
		}
		logger.Info("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "gracePeriod", r.GracePeriod)
		l.statuses.SetTerminal(pod.UID, evicted(r.Message))
		l.probes.StopLivenessAndStartup(pod.UID)
		grace := r.GracePeriod
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: &grace})
	case eviction.OpRestart:
		// A static pod evicted earlier, still wanted and still ended.
		if pod == nil || pod.DeletionTimestamp != nil || !l.statuses.IsTerminal(pod.UID) {
			r.Done(false)
			return
		}
		logger.Info("Starting an evicted pod again", "pod", klog.KObj(pod), "podUID", pod.UID)
		l.statuses.Forget(pod.UID)
		// As a pod added anew: refused now, its status says why.
		if !l.admit(logger, pod) {
			break
		}
		l.probes.AddPod(ctx, pod)
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: pod})
	case eviction.OpRetire:
		st, ok := l.statuses.Get(r.Pod.UID)
		if !l.mayStart(pod) || !ok || (st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed) || l.workers.IsTerminating(pod.UID) {
			r.Done(false)
			return
		}
		logger.Info("Removing the containers of a finished pod to reclaim disk", "pod", klog.KObj(pod), "podUID", pod.UID, "phase", st.Phase)
		// Its last status stays, and it is not started again.
		l.statuses.SetTerminal(pod.UID, status.Terminal{Reason: st.Reason, Message: st.Message})
		grace := int64(0)
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: &grace})
	}
	r.Done(true)
}
