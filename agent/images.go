package agent

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/imagegc"
	"github.com/minikubelet/minikubelet/agent/imageimport"
	"github.com/minikubelet/minikubelet/internal/cri"
)

// imagesDir is where an air-gapped node's image archives wait to be
// imported: <root-dir>/images/*.tar.
func (a *Agent) imagesDir() string { return filepath.Join(a.cfg.RootDir, "images") }

// importImages imports the archives of <root-dir>/images into the runtime
// (package imageimport). The agent calls it once the runtime answers and
// before the syncLoop starts, so that the first sync of every pod finds
// the images: a pod with imagePullPolicy Never would otherwise fail with
// ErrImageNeverPull and wait for a retry. Pods wait for the import; an
// archive already imported costs a read of its tar headers. Failures are
// logged, never fatal.
func (a *Agent) importImages(ctx context.Context, clients *cri.Clients) {
	logger := klog.FromContext(ctx).WithName("imageimport")
	ctx = klog.NewContext(ctx, logger)
	store, err := imageimport.NewContainerd(a.cfg.RuntimeEndpoint)
	if err != nil {
		logger.Error(err, "Cannot import image archives", "dir", a.imagesDir())
		return
	}
	defer func() { _ = store.Close() }()
	imageimport.ImportAll(ctx, imageimport.Config{
		Dir:       a.imagesDir(),
		StatePath: filepath.Join(a.cfg.RootDir, "image_import_state.json"),
		Store:     store,
		Images:    clients.Images,
		Clock:     a.clock,
	})
}

// newImageGC returns the image garbage collector of the configured policy.
func (a *Agent) newImageGC(clients *cri.Clients) (*imagegc.Manager, error) {
	m, err := imagegc.New(imagegc.Config{
		Policy: imagegc.Policy{
			HighThresholdPercent: a.cfg.ImageGCHighThresholdPercent,
			LowThresholdPercent:  a.cfg.ImageGCLowThresholdPercent,
			MinAge:               a.cfg.ImageMinimumGCAge,
		},
		Runtime:      clients.Runtime,
		Images:       clients.Images,
		Clock:        a.clock,
		Period:       a.cfg.ImageGCPeriod,
		SandboxImage: a.cfg.PodInfraContainerImage,
		OnRemoved:    a.metrics.ImageGarbageCollected.WithLabelValues("space").Inc,
	})
	if err != nil {
		return nil, fmt.Errorf("image garbage collection: %w", err)
	}
	return m, nil
}
