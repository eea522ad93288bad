package housekeeping

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// orphanCleaner removes the directories of pods the agent no longer uses.
type orphanCleaner interface {
	// CleanupOrphans unmounts and removes <root-dir>/pods/<uid> for each
	// uid keep does not keep and that is not set up right now.
	CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error
}

// PodDirs removes, off the syncLoop (DESIGN.md rule 1), what a crash
// or an earlier agent left under <root-dir>/pods and --pod-logs-dir:
// directories and mounts of pods that no source, no worker and nothing in
// the runtime refers to. A pod's own worker removes its directories when
// it terminates the pod; this is the housekeeping that catches the rest.
type PodDirs struct {
	dirs orphanCleaner
	// logs removes the log directories of pods not in use.
	logs podLogDirs
	// inUse returns the pods whose directories must stay.
	inUse func() map[types.UID]bool
	// kick wakes Run. Capacity 1: requests made while a cleanup runs
	// collapse into one more. Written by Request without blocking, read
	// by Run, never closed.
	kick chan struct{}
}

// PodDirsConfig configures PodDirs.
type PodDirsConfig struct {
	// Dirs removes <root-dir>/pods/<uid> of the pods not in use.
	Dirs orphanCleaner
	// LogsDir is --pod-logs-dir; "" leaves log directories alone.
	LogsDir string
	// InUse returns the pods whose directories must stay.
	InUse func() map[types.UID]bool
	Clock clock.PassiveClock
}

// NewPodDirs returns a cleaner that waits for requests.
func NewPodDirs(cfg PodDirsConfig) *PodDirs {
	return &PodDirs{
		dirs:  cfg.Dirs,
		logs:  podLogDirs{dir: cfg.LogsDir, clock: cfg.Clock},
		inUse: cfg.InUse,
		kick:  make(chan struct{}, 1),
	}
}

// Request asks for a cleanup; it never blocks, so the syncLoop may call
// it.
func (c *PodDirs) Request() {
	select {
	case c.kick <- struct{}{}:
	default: // one is pending already; it will see the same state or newer
	}
}

// Run cleans up once per request until ctx is done.
func (c *PodDirs) Run(ctx context.Context) {
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
