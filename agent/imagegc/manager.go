package imagegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultPeriod is the kubelet's image garbage collection period.
const DefaultPeriod = 5 * time.Minute

// runtimeService is the part of the CRI runtime service a pass uses.
type runtimeService interface {
	// ListContainers with a nil filter lists containers in every state.
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// imageService is the part of the CRI image service a pass uses.
type imageService interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// FsStats are a filesystem's size and the bytes unprivileged users may
// still write, as statfs(2) reports them.
type FsStats struct {
	Capacity  uint64
	Available uint64
}

// Config configures a Manager.
type Config struct {
	Policy  Policy
	Runtime runtimeService
	Images  imageService
	// Clock times passes and image ages; the real clock if nil.
	Clock clock.WithTicker
	// Period is the time between passes; DefaultPeriod if zero.
	Period time.Duration
	// SandboxImage, if set, is never removed (the kubelet's
	// --pod-infra-container-image), in addition to the runtime's own.
	SandboxImage string
	// Statfs returns the stats of the filesystem holding path; statfs(2)
	// if nil.
	Statfs func(path string) (FsStats, error)
	// OnRemoved, if set, is called once per image removed.
	OnRemoved func()
	// InUse, if set, names more images in use (by reference or ID) than
	// the containers' own: those of the node's pods' image volumes,
	// which the runtime mounts and no container is created from.
	InUse func() []string
}

// Manager is the image garbage collector. Create it with New.
type Manager struct {
	cfg Config

	// mu serializes passes; it guards records.
	mu sync.Mutex
	// records are the images of the last pass, by image ID.
	records map[string]*record
}

// record is what a Manager knows of one image.
type record struct {
	firstDetected time.Time
	// lastUsed is zero while no container was seen using the image.
	lastUsed time.Time
	size     uint64
	// tags are the image's RepoTags, for log lines.
	tags []string
}

// New checks cfg's policy and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("image garbage collection policy: %w", err)
	}
	if cfg.Runtime == nil || cfg.Images == nil {
		return nil, errors.New("image garbage collection: Config.Runtime and Config.Images are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Statfs == nil {
		cfg.Statfs = statfs
	}
	return &Manager{cfg: cfg, records: map[string]*record{}}, nil
}

// Run makes a pass at once and then every Config.Period until ctx ends; a
// failed pass is logged and the next one tries again. With garbage
// collection turned off (HighThresholdPercent 100) it returns at once.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("imagegc")
	ctx = klog.NewContext(ctx, logger)
	if m.cfg.Policy.disabled() {
		logger.Info("Image garbage collection is off (--image-gc-high-threshold=100)")
		return
	}
	logger.Info("Starting image garbage collection", "highThresholdPercent", m.cfg.Policy.HighThresholdPercent, "lowThresholdPercent", m.cfg.Policy.LowThresholdPercent, "minAge", m.cfg.Policy.MinAge, "period", m.cfg.Period)
	ticker := m.cfg.Clock.NewTicker(m.cfg.Period)
	defer ticker.Stop()
	for {
		if _, err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Image garbage collection failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Result is what one pass saw and did.
type Result struct {
	// UsagePercent is the image filesystem's usage, rounded up.
	UsagePercent int
	// Wanted is the number of bytes the pass set out to free; 0 below the
	// high threshold.
	Wanted uint64
	// Freed is the sum of the removed images' sizes.
	Freed uint64
	// Removed are the IDs of the removed images, in removal order.
	Removed []string
}

// GarbageCollect makes one pass, as the package doc describes. It returns
// an error when it could not read what it needs or could not free Wanted
// bytes; the Result says what it did either way. Passes are serialized:
// a call waits for one in progress.
func (m *Manager) GarbageCollect(ctx context.Context) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	logger := klog.FromContext(ctx)
	now := m.cfg.Clock.Now()

	inUse, keep, err := m.detect(ctx, now)
	if err != nil {
		return Result{}, err
	}
	fs, mountpoint, err := m.imageFs(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{UsagePercent: 100 - int(fs.Available*100/fs.Capacity)}
	if res.UsagePercent < m.cfg.Policy.HighThresholdPercent {
		logger.V(4).Info("Image filesystem usage is below the high threshold", "usagePercent", res.UsagePercent, "highThresholdPercent", m.cfg.Policy.HighThresholdPercent, "mountpoint", mountpoint)
		return res, nil
	}
	if target := fs.Capacity * uint64(100-m.cfg.Policy.LowThresholdPercent) / 100; target > fs.Available {
		res.Wanted = target - fs.Available
	}
	logger.Info("Image filesystem usage is over the high threshold; removing unused images down to the low threshold", "usagePercent", res.UsagePercent, "highThresholdPercent", m.cfg.Policy.HighThresholdPercent, "lowThresholdPercent", m.cfg.Policy.LowThresholdPercent, "bytesToFree", res.Wanted, "mountpoint", mountpoint)

	freed, removed, errs := m.remove(ctx, now, m.evictionOrder(inUse, keep), res.Wanted)
	res.Freed, res.Removed = freed, removed
	if res.Freed < res.Wanted {
		errs = append([]error{fmt.Errorf("freed %d of the %d bytes wanted on %s: no other image is unused, unpinned, not the sandbox image and older than %v", res.Freed, res.Wanted, mountpoint, m.cfg.Policy.MinAge)}, errs...)
	}
	return res, errors.Join(errs...)
}

// DeleteUnusedImages removes every image no container uses that is not
// kept (pinned, the sandbox image) and is older than Policy.MinAge,
// whatever the image filesystem's usage and even with garbage collection
// turned off: the kubelet's eviction manager calls it under disk pressure
// before it evicts pods. Serialized with passes.
func (m *Manager) DeleteUnusedImages(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	inUse, keep, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	freed, removed, errs := m.remove(ctx, now, m.evictionOrder(inUse, keep), math.MaxUint64)
	klog.FromContext(ctx).Info("Removed every unused image", "images", len(removed), "bytesFreed", freed)
	return errors.Join(errs...)
}

// remove removes the candidates in order, skipping those younger than
// Policy.MinAge, until want bytes are freed. m.mu must be held.
func (m *Manager) remove(ctx context.Context, now time.Time, candidates []candidate, want uint64) (freed uint64, removed []string, errs []error) {
	logger := klog.FromContext(ctx)
	for _, c := range candidates {
		if freed >= want {
			break
		}
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if age := now.Sub(c.firstDetected); age < m.cfg.Policy.MinAge {
			logger.V(4).Info("Image is too new to remove", "imageID", c.id, "image", c.tags, "age", age, "minAge", m.cfg.Policy.MinAge)
			continue
		}
		if err := m.cfg.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.id}); err != nil {
			errs = append(errs, fmt.Errorf("remove image %s %v: %w", c.id, c.tags, err))
			continue
		}
		delete(m.records, c.id)
		freed += c.size
		removed = append(removed, c.id)
		if m.cfg.OnRemoved != nil {
			m.cfg.OnRemoved()
		}
		logger.Info("Removed unused image", "imageID", c.id, "image", c.tags, "size", c.size, "lastUsed", c.lastUsed)
	}
	return freed, removed, errs
}

// detect refreshes the records from the runtime's images and containers
// at now, and returns the IDs of the images in use and of those never to
// remove (pinned or the sandbox image).
func (m *Manager) detect(ctx context.Context, now time.Time) (inUse, keep map[string]bool, err error) {
	images, err := m.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list images: %w", err)
	}
	containers, err := m.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", err)
	}
	sandbox, err := m.sandboxImages(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A container names its image by ID (ImageRef, ImageId) and by what
	// it was created from, an ID or a name.
	used := map[string]bool{}
	for _, c := range containers {
		for _, ref := range []string{c.GetImageRef(), c.GetImageId(), c.GetImage().GetImage()} {
			if ref != "" {
				used[ref] = true
			}
		}
	}
	if m.cfg.InUse != nil {
		for _, ref := range m.cfg.InUse() {
			used[ref] = true
			// A reference as a pod gives it ("busybox:1.36") is not a
			// tag of the image's: CRI resolves it.
			resp, err := m.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
			if err != nil {
				return nil, nil, fmt.Errorf("image status of %s (an image volume's): %w", ref, err)
			}
			if id := resp.GetImage().GetId(); id != "" {
				used[id] = true
			}
		}
	}
	inUse, keep = map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	for _, img := range images {
		id := img.GetId()
		if id == "" {
			continue
		}
		seen[id] = true
		r, ok := m.records[id]
		if !ok {
			r = &record{firstDetected: now}
			m.records[id] = r
		}
		r.size = img.GetSize()
		r.tags = img.GetRepoTags()
		if anyIn(used, img) {
			r.lastUsed = now
			inUse[id] = true
		}
		if img.GetPinned() || sandbox[id] || anyIn(sandbox, img) {
			keep[id] = true
		}
	}
	for id := range m.records {
		if !seen[id] {
			delete(m.records, id)
		}
	}
	return inUse, keep, nil
}

// anyIn reports whether set holds img's ID, one of its tags or one of its
// digests.
func anyIn(set map[string]bool, img *runtimeapi.Image) bool {
	if set[img.GetId()] {
		return true
	}
	for _, names := range [][]string{img.GetRepoTags(), img.GetRepoDigests()} {
		for _, n := range names {
			if set[n] {
				return true
			}
		}
	}
	return false
}

// sandboxImages returns the sandbox images as given (Config.SandboxImage
// and the runtime's) and the IDs CRI resolves them to.
func (m *Manager) sandboxImages(ctx context.Context) (map[string]bool, error) {
	refs := map[string]bool{}
	if m.cfg.SandboxImage != "" {
		refs[m.cfg.SandboxImage] = true
	}
	st, err := m.cfg.Runtime.Status(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("runtime status (for its sandbox image): %w", err)
	}
	if cfg := st.GetInfo()["config"]; cfg != "" {
		var c struct {
			SandboxImage string `json:"sandboxImage"`
		}
		if err := json.Unmarshal([]byte(cfg), &c); err != nil {
			return nil, fmt.Errorf("runtime status: parse the CRI config for its sandboxImage: %w", err)
		}
		if c.SandboxImage != "" {
			refs[c.SandboxImage] = true
		}
	}
	out := map[string]bool{}
	for ref := range refs {
		out[ref] = true
		resp, err := m.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
		if err != nil {
			return nil, fmt.Errorf("image status of the sandbox image %s: %w", ref, err)
		}
		if id := resp.GetImage().GetId(); id != "" {
			out[id] = true
		}
	}
	return out, nil
}

// imageFs returns the stats of the image filesystem and its mountpoint.
func (m *Manager) imageFs(ctx context.Context) (FsStats, string, error) {
	resp, err := m.cfg.Images.ImageFsInfo(ctx)
	if err != nil {
		return FsStats{}, "", fmt.Errorf("image filesystem info: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return FsStats{}, "", errors.New("image filesystem info: the runtime names no image filesystem")
	}
	mountpoint := fss[0].GetFsId().GetMountpoint()
	fs, err := m.cfg.Statfs(mountpoint)
	if err != nil {
		return FsStats{}, "", fmt.Errorf("image filesystem %s: %w", mountpoint, err)
	}
	if fs.Capacity == 0 {
		return FsStats{}, "", fmt.Errorf("image filesystem %s: capacity is 0", mountpoint)
	}
	fs.Available = min(fs.Available, fs.Capacity)
	return fs, mountpoint, nil
}

// candidate is an image a pass may remove.
type candidate struct {
	id string
	record
}

// evictionOrder returns the images neither in use nor kept, least
// recently used first; never-used images come first, oldest sighting
// first; ties go by ID so that passes are repeatable.
func (m *Manager) evictionOrder(inUse, keep map[string]bool) []candidate {
	var out []candidate
	for id, r := range m.records {
		if inUse[id] || keep[id] {
			continue
		}
		out = append(out, candidate{id: id, record: *r})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.lastUsed.Equal(b.lastUsed) {
			return a.lastUsed.Before(b.lastUsed)
		}
		if !a.firstDetected.Equal(b.firstDetected) {
			return a.firstDetected.Before(b.firstDetected)
		}
		return a.id < b.id
	})
	return out
}
