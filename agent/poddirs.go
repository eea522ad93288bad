package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// orphanCleaner removes the directories of pods the agent no longer uses.
type orphanCleaner interface {
	// CleanupOrphans unmounts and removes <root-dir>/pods/<uid> for each
	// uid keep does not keep and that is not set up right now.
	CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error
}

// podDirCleaner removes, off the syncLoop (DESIGN.md rule 1), what a crash
// or an earlier agent left under <root-dir>/pods and --pod-logs-dir:
// directories and mounts of pods that no source, no worker and nothing in
// the runtime refers to. A pod's own worker removes its directories when
// it terminates the pod; this is the housekeeping that catches the rest.
type podDirCleaner struct {
	dirs orphanCleaner
	// logs removes the log directories of pods not in use.
	logs podLogDirs
	// inUse returns the pods whose directories must stay.
	inUse func() map[types.UID]bool
	// kick wakes run. Capacity 1: requests made while a cleanup runs
	// collapse into one more. Written by the syncLoop without blocking,
	// read by run, never closed.
	kick chan struct{}
}

// podDirCleanerConfig configures a podDirCleaner.
type podDirCleanerConfig struct {
	// Dirs removes <root-dir>/pods/<uid> of the pods not in use.
	Dirs orphanCleaner
	// LogsDir is --pod-logs-dir; "" leaves log directories alone.
	LogsDir string
	// InUse returns the pods whose directories must stay.
	InUse func() map[types.UID]bool
	Clock clock.PassiveClock
}

func newPodDirCleaner(cfg podDirCleanerConfig) *podDirCleaner {
	return &podDirCleaner{
		dirs:  cfg.Dirs,
		logs:  podLogDirs{dir: cfg.LogsDir, clock: cfg.Clock},
		inUse: cfg.InUse,
		kick:  make(chan struct{}, 1),
	}
}

// request asks for a cleanup; it never blocks.
func (c *podDirCleaner) request() {
	select {
	case c.kick <- struct{}{}:
	default: // one is pending already; it will see the same state or newer
	}
}

// run cleans up once per request until ctx is done.
func (c *podDirCleaner) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("poddirs")
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		inUse := c.inUse()
		if err := c.dirs.CleanupOrphans(klog.NewContext(ctx, logger), func(uid types.UID) bool { return inUse[uid] }); err != nil && ctx.Err() == nil {
			logger.Error(err, "Cleaning up the directories of gone pods failed; will retry at the next housekeeping")
		}
		if err := c.logs.cleanup(klog.NewContext(ctx, logger), c.inUse); err != nil && ctx.Err() == nil {
			logger.Error(err, "Cleaning up the log directories of gone pods failed; will retry at the next housekeeping")
		}
	}
}

// cleanupPodDirs asks for the housekeeping of pod directories once the
// agent knows what it needs: every source has sent its pods and the PLEG
// has seen the runtime (a pod still running must keep its volumes). A
// syncLoop step: it only hands the work over.
func (a *Agent) cleanupPodDirs() {
	p := a.pleg.Load()
	if a.podDirs == nil || !a.merger.AllSourcesSeen() || p == nil || p.LastSeen().IsZero() {
		return
	}
	a.podDirs.request()
}

// podsInUse are the pods whose directories must stay: those the sources
// want, those a worker handles, and those the runtime still holds
// anything of.
func (a *Agent) podsInUse() map[types.UID]bool {
	in := map[types.UID]bool{}
	for _, uid := range a.workers.Known() {
		in[uid] = true
	}
	for _, p := range a.pods.List() {
		in[p.UID] = true
	}
	a.cache.ForEach(func(uid types.UID, st *kubecontainer.PodStatus) {
		if len(st.Sandboxes)+len(st.Containers) > 0 {
			in[uid] = true
		}
	})
	return in
}
