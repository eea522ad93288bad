package imageimport

import (
	"context"
	"path/filepath"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// RootDirConfig says where a node keeps the archives to import and which
// runtime to import them into.
type RootDirConfig struct {
	// RootDir is --root-dir: archives wait in <root-dir>/images/*.tar; the
	// state is kept in <root-dir>/image_import_state.json.
	RootDir string
	// RuntimeEndpoint is the containerd socket (CRI's endpoint).
	RuntimeEndpoint string
	// Images is the CRI image service (Config.Images).
	Images imageStatuser
	Clock  clock.Clock
}

// ImportRootDir imports the archives of <root-dir>/images into the
// containerd at cfg.RuntimeEndpoint with ImportAll. The agent calls it
// once the runtime answers and before the syncLoop starts, so that the
// first sync of every pod finds the images: a pod with imagePullPolicy
// Never would otherwise fail with ErrImageNeverPull and wait for a retry.
// Pods wait for the import; an archive already imported costs a read of
// its tar headers. Failures are logged, never returned.
func ImportRootDir(ctx context.Context, cfg RootDirConfig) {
	logger := klog.FromContext(ctx).WithName("imageimport")
	ctx = klog.NewContext(ctx, logger)
	dir := filepath.Join(cfg.RootDir, "images")
	store, err := NewContainerd(cfg.RuntimeEndpoint, cfg.Clock)
	if err != nil {
		logger.Error(err, "Cannot import image archives", "dir", dir)
		return
	}
	defer func() { _ = store.Close() }()
	ImportAll(ctx, Config{
		Dir:       dir,
		StatePath: filepath.Join(cfg.RootDir, "image_import_state.json"),
		Store:     store,
		Images:    cfg.Images,
		Clock:     cfg.Clock,
	})
}
