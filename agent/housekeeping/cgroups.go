package housekeeping

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// cgroupCleanupPeriod is how often the cgroups of pods the agent no longer
// runs are looked for and removed.
const cgroupCleanupPeriod = 10 * time.Second

// cgroupCleaner removes pod cgroups (cgroups.Manager).
type cgroupCleaner interface {
	// Cleanup removes the cgroup of every pod keep does not keep.
	Cleanup(ctx context.Context, keep func(types.UID) bool) error
}

// Cgroups removes, every cgroupCleanupPeriod, the cgroups of pods that
// neither the sources, nor a worker, nor the runtime hold any more: what a
// removal that failed or an agent that died left.
type Cgroups struct {
	cfg CgroupsConfig
}

// CgroupsConfig configures Cgroups. Every field is required.
type CgroupsConfig struct {
	Cgroups cgroupCleaner
	// Uses reports whether a pod is in use (Usage.Uses); it is asked at
	// the time each cgroup is looked at.
	Uses  func(types.UID) bool
	Clock clock.WithTicker
}

// NewCgroups returns the cleanup; Run runs it.
func NewCgroups(cfg CgroupsConfig) *Cgroups { return &Cgroups{cfg: cfg} }

// Run cleans up every cgroupCleanupPeriod until ctx is done.
func (c *Cgroups) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ticker := c.cfg.Clock.NewTicker(cgroupCleanupPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		if err := c.cfg.Cgroups.Cleanup(ctx, c.cfg.Uses); err != nil {
			logger.V(2).Info("Removing leftover pod cgroups failed; will retry", "err", err)
		}
	}
}
