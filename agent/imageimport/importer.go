package imageimport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config configures ImportAll.
type Config struct {
	// Dir holds the archives: every regular file *.tar directly in it
	// whose name does not start with a dot. A missing Dir holds none.
	Dir string
	// StatePath is where ImportAll remembers what it imported, so that a
	// later start skips archives whose images are still there.
	StatePath string
	// Store is the runtime's image store, e.g. a *Containerd.
	Store Store
	// Images, if set, is the CRI image service, asked until it sees each
	// imported image (CRI learns of new images through containerd's
	// events), so that a pod synced next finds it.
	Images imageStatuser
	// Clock paces that wait; the real clock if nil.
	Clock clock.Clock
	// VisibleTimeout bounds that wait per image; 10s if zero.
	VisibleTimeout time.Duration
}

// imageStatuser is the part of the CRI image service ImportAll uses.
type imageStatuser interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
}

// Result says what ImportAll did with each archive, by file name.
type Result struct {
	// Imported archives were read into the runtime.
	Imported []string
	// Skipped archives were imported before with the same digest, and all
	// their images are still in the runtime, unpacked.
	Skipped []string
	// Failed archives could not be imported; each was logged with its
	// cause.
	Failed []string
}

// visiblePoll is how often ImportAll asks CRI whether it sees an image.
const visiblePoll = 100 * time.Millisecond

// ImportAll imports every archive of cfg.Dir into cfg.Store, in name
// order, one at a time. It skips an archive whose digest (that of its
// index.json and manifest.json) matches the one recorded when it was last
// imported, provided the images it named then are still there. A file
// that is not an image archive, or whose import fails, is logged with its
// name and the cause and skipped: ImportAll never fails as a whole. It
// returns early, with what it did so far, when ctx ends.
func ImportAll(ctx context.Context, cfg Config) Result {
	logger := klog.FromContext(ctx)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.VisibleTimeout == 0 {
		cfg.VisibleTimeout = 10 * time.Second
	}
	var res Result
	names, err := archives(cfg.Dir)
	if err != nil {
		logger.Error(err, "Cannot list image archives; importing none", "dir", cfg.Dir)
		return res
	}
	if len(names) == 0 {
		logger.V(2).Info("No image archives to import", "dir", cfg.Dir)
		return res
	}
	prev, err := loadState(cfg.StatePath)
	if err != nil {
		logger.Error(err, "Forgetting what earlier starts imported; importing every archive again", "state", cfg.StatePath)
	}
	next := state{Files: map[string]fileRecord{}}
	for _, name := range names {
		if rec, ok := prev.Files[name]; ok {
			next.Files[name] = rec
		}
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		file := filepath.Join(cfg.Dir, name)
		start := cfg.Clock.Now()
		rec, skipped, err := importOne(ctx, cfg, file, prev.Files[name])
		switch {
		case err != nil:
			res.Failed = append(res.Failed, name)
			logger.Error(err, "Image archive not imported; skipping it", "file", file)
		case skipped:
			res.Skipped = append(res.Skipped, name)
			logger.V(2).Info("Image archive already imported", "file", file, "digest", rec.Digest, "images", imageNames(rec.Images))
		default:
			res.Imported = append(res.Imported, name)
			next.Files[name] = rec
			logger.Info("Imported image archive", "file", file, "digest", rec.Digest, "images", imageNames(rec.Images), "duration", cfg.Clock.Since(start).Round(time.Millisecond))
			waitVisible(ctx, cfg, rec.Images)
		}
	}
	if len(res.Imported) > 0 || len(next.Files) != len(prev.Files) {
		if err := next.save(cfg.StatePath); err != nil {
			logger.Error(err, "Cannot record the imported image archives; the next start imports them again")
		}
	}
	return res
}

// importOne imports file unless rec shows it was imported before with the
// same digest and its images are still there.
func importOne(ctx context.Context, cfg Config, file string, rec fileRecord) (fileRecord, bool, error) {
	f, err := os.Open(file) //nolint:gosec // G304: an archive of the configured images directory
	if err != nil {
		return rec, false, fmt.Errorf("open: %w", err)
	}
	defer func() { _ = f.Close() }()
	dgst, err := archiveDigest(f)
	if err != nil {
		return rec, false, fmt.Errorf("not an image archive (an OCI image layout or docker save tarball): %w", err)
	}
	if rec.Digest == dgst.String() {
		present, err := allPresent(ctx, cfg.Store, rec.Images)
		if err != nil {
			return rec, false, err
		}
		if present {
			return rec, true, nil
		}
	}
	r, err := uncompressed(f)
	if err != nil {
		return rec, false, err
	}
	imgs, err := cfg.Store.Import(ctx, r)
	if err != nil {
		return rec, false, err
	}
	if len(imgs) == 0 {
		return rec, false, errors.New("the archive names no image: give each manifest in index.json an io.containerd.image.name annotation or an org.opencontainers.image.ref.name that is a full reference (example.com/app:1.0), or docker save it with a tag")
	}
	return fileRecord{Digest: dgst.String(), Images: imgs}, false, nil
}

// allPresent reports whether every image of imgs is in store.
func allPresent(ctx context.Context, store Store, imgs []Image) (bool, error) {
	for _, img := range imgs {
		ok, err := store.Has(ctx, img)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// waitVisible asks CRI, if configured, until it sees each of imgs or
// cfg.VisibleTimeout passes; a timeout is logged, not an error (CRI may
// still see the image by the time a pod asks for it).
func waitVisible(ctx context.Context, cfg Config, imgs []Image) {
	if cfg.Images == nil {
		return
	}
	logger := klog.FromContext(ctx)
	for _, img := range imgs {
		deadline := cfg.Clock.Now().Add(cfg.VisibleTimeout)
		for {
			resp, err := cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: img.Name}, false)
			if err == nil && resp.GetImage() != nil {
				break
			}
			if !cfg.Clock.Now().Before(deadline) {
				logger.Info("CRI does not see an imported image yet", "image", img.Name, "waited", cfg.VisibleTimeout, "err", err)
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-cfg.Clock.After(visiblePoll):
			}
		}
	}
}

// archives lists the archive file names of dir, sorted.
func archives(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".tar") {
			continue
		}
		// Follow symlinks: a link to an archive elsewhere is fine.
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

func imageNames(imgs []Image) []string {
	out := make([]string, len(imgs))
	for i, img := range imgs {
		out[i] = img.Name
	}
	return out
}
