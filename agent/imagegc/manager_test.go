package imagegc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// fakeCRI is the runtime and image services of a pass: images by ID,
// containers, the runtime's CRI config and the image filesystem's stats.
type fakeCRI struct {
	mu         sync.Mutex
	images     map[string]*runtimeapi.Image
	containers []*runtimeapi.Container
	// config is Status(verbose)'s Info["config"].
	config string
	fs     FsStats
	// removeErr fails RemoveImage of these IDs.
	removeErr map[string]error
	removed   []string
}

var (
	_ runtimeService = (*fakeCRI)(nil)
	_ imageService   = (*fakeCRI)(nil)
)

func newFakeCRI(fs FsStats, images ...*runtimeapi.Image) *fakeCRI {
	f := &fakeCRI{images: map[string]*runtimeapi.Image{}, fs: fs, removeErr: map[string]error{}}
	for _, img := range images {
		f.images[img.Id] = img
	}
	return f
}

// image is an image of size bytes, tagged <id>:tag.
func image(id string, size uint64) *runtimeapi.Image {
	return &runtimeapi.Image{Id: id, RepoTags: []string{"example.com/" + id + ":tag"}, Size: size}
}

func pinned(img *runtimeapi.Image) *runtimeapi.Image {
	img.Pinned = true
	return img
}

func running(id, imageRef string) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, ImageRef: imageRef, Image: &runtimeapi.ImageSpec{Image: imageRef}, State: runtimeapi.ContainerState_CONTAINER_RUNNING}
}

func exited(id, imageRef string) *runtimeapi.Container {
	c := running(id, imageRef)
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	return c
}

func (f *fakeCRI) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if filter != nil {
		return nil, errors.New("a pass must list containers in every state")
	}
	return slices.Clone(f.containers), nil
}

func (f *fakeCRI) Status(_ context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}}
	if verbose && f.config != "" {
		resp.Info = map[string]string{"config": f.config}
	}
	return resp, nil
}

func (f *fakeCRI) ListImages(_ context.Context, _ *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range f.images {
		out = append(out, img)
	}
	return out, nil
}

// ImageStatus resolves an ID or a tag, as CRI does.
func (f *fakeCRI) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, img := range f.images {
		if img.Id == spec.Image || slices.Contains(img.RepoTags, spec.Image) {
			return &runtimeapi.ImageStatusResponse{Image: img}, nil
		}
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

func (f *fakeCRI) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.removeErr[spec.Image]; err != nil {
		return err
	}
	if _, ok := f.images[spec.Image]; !ok {
		return fmt.Errorf("RemoveImage by %q: want an image ID", spec.Image)
	}
	delete(f.images, spec.Image)
	f.removed = append(f.removed, spec.Image)
	return nil
}

func (f *fakeCRI) ImageFsInfo(_ context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd/snapshots"}}}}, nil
}

func (f *fakeCRI) statfs(path string) (FsStats, error) {
	if path != "/var/lib/containerd/snapshots" {
		return FsStats{}, fmt.Errorf("statfs of %q, not the image filesystem's mountpoint", path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fs, nil
}

func (f *fakeCRI) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newManager(t *testing.T, f *fakeCRI, clk *clocktesting.FakeClock, policy Policy, sandboxImage string) (*Manager, *int) {
	t.Helper()
	removed := new(int)
	m, err := New(Config{
		Policy:       policy,
		Runtime:      f,
		Images:       f,
		Clock:        clk,
		SandboxImage: sandboxImage,
		Statfs:       f.statfs,
		OnRemoved:    func() { *removed++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, removed
}

// Capacity 1000 bytes: at 900 used (90%) a pass under the default policy
// wants 1000*20/100 - 100 = 100 bytes.
var (
	full   = FsStats{Capacity: 1000, Available: 100}
	roomy  = FsStats{Capacity: 1000, Available: 200} // 80%
	atHigh = FsStats{Capacity: 1000, Available: 150} // 85%: wants 50
)

// One pass on a runtime whose images were all first seen an hour ago.
func TestGarbageCollectDecides(t *testing.T) {
	tests := []struct {
		name         string
		fs           FsStats
		images       []*runtimeapi.Image
		containers   []*runtimeapi.Container
		config       string
		sandboxImage string
		removeErr    map[string]error
		wantRemoved  []string
		wantWanted   uint64
		wantErr      string
	}{{
		name:        "below the high threshold nothing goes",
		fs:          roomy,
		images:      []*runtimeapi.Image{image("a", 500)},
		wantRemoved: nil,
	}, {
		name:        "at the high threshold a pass frees down to the low one",
		fs:          atHigh,
		images:      []*runtimeapi.Image{image("a", 60)},
		wantRemoved: []string{"a"},
		wantWanted:  50,
	}, {
		name:        "it stops once enough is freed",
		fs:          full,
		images:      []*runtimeapi.Image{image("a", 60), image("b", 60), image("c", 60)},
		wantRemoved: []string{"a", "b"},
		wantWanted:  100,
	}, {
		name:        "images of running and exited containers stay",
		fs:          full,
		images:      []*runtimeapi.Image{image("a", 500), image("b", 500), image("c", 50)},
		containers:  []*runtimeapi.Container{running("c1", "a"), exited("c2", "b")},
		wantRemoved: []string{"c"},
		wantWanted:  100,
		wantErr:     "freed 50 of the 100 bytes wanted",
	}, {
		name:   "a container naming its image by tag or by ImageId keeps it",
		fs:     full,
		images: []*runtimeapi.Image{image("a", 500), image("b", 500)},
		containers: []*runtimeapi.Container{
			{Id: "c1", Image: &runtimeapi.ImageSpec{Image: "example.com/a:tag"}},
			{Id: "c2", ImageId: "b"},
		},
		wantWanted: 100,
		wantErr:    "freed 0 of the 100 bytes wanted",
	}, {
		name:        "pinned images stay",
		fs:          full,
		images:      []*runtimeapi.Image{pinned(image("pause", 500)), image("b", 500)},
		wantRemoved: []string{"b"},
		wantWanted:  100,
	}, {
		name:        "the sandbox image of the runtime's CRI config stays (containerd 1.6)",
		fs:          full,
		images:      []*runtimeapi.Image{image("pause", 500), image("b", 500)},
		config:      `{"sandboxImage":"example.com/pause:tag","containerd":{"snapshotter":"overlayfs"}}`,
		wantRemoved: []string{"b"},
		wantWanted:  100,
	}, {
		name:         "the configured sandbox image stays",
		fs:           full,
		images:       []*runtimeapi.Image{image("pause", 500), image("b", 500)},
		sandboxImage: "example.com/pause:tag",
		wantRemoved:  []string{"b"},
		wantWanted:   100,
	}, {
		name:         "nothing removable",
		fs:           full,
		images:       []*runtimeapi.Image{image("pause", 500), pinned(image("p", 10))},
		sandboxImage: "pause",
		wantWanted:   100,
		wantErr:      "freed 0 of the 100 bytes wanted",
	}, {
		name:        "a failed removal is reported and the next image tried",
		fs:          full,
		images:      []*runtimeapi.Image{image("a", 500), image("b", 500)},
		removeErr:   map[string]error{"a": errors.New("image is in use by a container")},
		wantRemoved: []string{"b"},
		wantWanted:  100,
		wantErr:     "remove image a [example.com/a:tag]: image is in use by a container",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCRI(tt.fs, tt.images...)
			f.containers, f.config = tt.containers, tt.config
			for id, err := range tt.removeErr {
				f.removeErr[id] = err
			}
			clk := clocktesting.NewFakeClock(t0)
			m, counted := newManager(t, f, clk, DefaultPolicy(), tt.sandboxImage)
			// The first pass only detects: every image is too new.
			if res, _ := m.GarbageCollect(context.Background()); len(res.Removed) != 0 {
				t.Fatalf("first pass removed %v, images first seen 0s ago", res.Removed)
			}
			clk.Step(time.Hour)
			res, err := m.GarbageCollect(context.Background())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			if !slices.Equal(res.Removed, tt.wantRemoved) || !slices.Equal(f.removedIDs(), tt.wantRemoved) {
				t.Errorf("removed %v (runtime: %v), want %v", res.Removed, f.removedIDs(), tt.wantRemoved)
			}
			if res.Wanted != tt.wantWanted {
				t.Errorf("wanted %d bytes, want %d", res.Wanted, tt.wantWanted)
			}
			if *counted != len(tt.wantRemoved) {
				t.Errorf("OnRemoved called %d times, want %d", *counted, len(tt.wantRemoved))
			}
		})
	}
}

// Images go least recently used first: never-used ones by first sighting,
// then used ones by last use; an image is too new until MinAge after its
// first sighting, and a restart (a new Manager) sees every image anew.
func TestGarbageCollectOrderAndAge(t *testing.T) {
	ctx := context.Background()
	f := newFakeCRI(FsStats{Capacity: 1000, Available: 0})
	clk := clocktesting.NewFakeClock(t0)
	m, _ := newManager(t, f, clk, Policy{HighThresholdPercent: 90, LowThresholdPercent: 0, MinAge: 10 * time.Minute}, "")
	pass := func() Result {
		t.Helper()
		res, _ := m.GarbageCollect(ctx)
		return res
	}
	add := func(imgs ...*runtimeapi.Image) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, img := range imgs {
			f.images[img.Id] = img
		}
	}
	setContainers := func(cs ...*runtimeapi.Container) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.containers = cs
	}

	// t0: used-early and used-late run; old-unused is seen.
	add(image("used-early", 1), image("used-late", 1), image("old-unused", 1))
	setContainers(running("c1", "used-early"), running("c2", "used-late"))
	pass()
	// t0+5m: used-early's container is gone; new-unused appears.
	clk.Step(5 * time.Minute)
	setContainers(running("c2", "used-late"))
	add(image("new-unused", 1))
	pass()
	// t0+10m: used-late's container is gone too.
	clk.Step(5 * time.Minute)
	setContainers()
	if res := pass(); !slices.Equal(res.Removed, []string{"old-unused", "used-early", "used-late"}) {
		t.Fatalf("at t0+10m removed %v, want old-unused (never used), used-early, used-late; new-unused is 5m old", res.Removed)
	}
	clk.Step(5 * time.Minute)
	if res := pass(); !slices.Equal(res.Removed, []string{"new-unused"}) {
		t.Fatalf("at t0+15m removed %v, want new-unused", res.Removed)
	}

	// A restarted agent's manager times every image from its own start.
	add(image("survivor", 1))
	m2, _ := newManager(t, f, clk, Policy{HighThresholdPercent: 90, LowThresholdPercent: 0, MinAge: 10 * time.Minute}, "")
	if res, _ := m2.GarbageCollect(ctx); len(res.Removed) != 0 {
		t.Fatalf("a new manager removed %v at its first pass", res.Removed)
	}
	clk.Step(10 * time.Minute)
	if res, _ := m2.GarbageCollect(ctx); !slices.Equal(res.Removed, []string{"survivor"}) {
		t.Fatalf("removed %v MinAge after the restart, want survivor", res.Removed)
	}
}

// Run makes a pass at once and every Period, and stops with its context;
// with the high threshold at 100 it makes none.
func TestRun(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy Policy
		want   []string
	}{
		{"on", Policy{HighThresholdPercent: 50, LowThresholdPercent: 10}, []string{"a"}},
		{"off at 100%", Policy{HighThresholdPercent: 100, LowThresholdPercent: 10}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCRI(full, image("a", 10))
			clk := clocktesting.NewFakeClock(t0)
			m, err := New(Config{Policy: tt.policy, Runtime: f, Images: f, Clock: clk, Period: time.Minute, Statfs: f.statfs})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				m.Run(ctx)
			}()
			if tt.policy.disabled() {
				<-done
				if got := f.removedIDs(); len(got) != 0 {
					t.Fatalf("removed %v with garbage collection off", got)
				}
				cancel()
				return
			}
			polltest.Until(t, 5*time.Second, "the first pass, at start, to remove a", func() (bool, string) {
				return slices.Equal(f.removedIDs(), tt.want), fmt.Sprintf("removed %v", f.removedIDs())
			})
			// A new image goes at the next tick.
			f.mu.Lock()
			f.images["b"] = image("b", 10)
			f.mu.Unlock()
			clk.Step(time.Minute)
			polltest.Until(t, 5*time.Second, "the second pass to remove b", func() (bool, string) {
				return len(f.removedIDs()) == 2, fmt.Sprintf("removed %v", f.removedIDs())
			})
			cancel()
			<-done
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tt := range []struct {
		p       Policy
		wantErr string
	}{
		{DefaultPolicy(), ""},
		{Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}, ""},
		{Policy{HighThresholdPercent: 1, LowThresholdPercent: 0}, ""},
		{Policy{HighThresholdPercent: 80, LowThresholdPercent: 80}, "must be below the high threshold"},
		{Policy{HighThresholdPercent: 70, LowThresholdPercent: 80}, "must be below the high threshold"},
		{Policy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "high threshold 101% is not in [0, 100]"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: -1}, "low threshold -1% is not in [0, 100]"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "minimum age -1s is negative"},
	} {
		t.Run(fmt.Sprintf("%+v", tt.p), func(t *testing.T) {
			err := tt.p.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// The images of image volumes (Config.InUse), named as pods name them,
// stay.
func TestGarbageCollectKeepsImageVolumes(t *testing.T) {
	f := newFakeCRI(full, image("a", 500), image("b", 500))
	clk := clocktesting.NewFakeClock(t0)
	m, err := New(Config{
		Policy:  DefaultPolicy(),
		Runtime: f,
		Images:  f,
		Clock:   clk,
		Statfs:  f.statfs,
		InUse:   func() []string { return []string{"example.com/a:tag", "example.com/gone:1"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GarbageCollect(context.Background()); err == nil {
		t.Fatal("first pass freed its bytes: every image is too new")
	}
	clk.Step(time.Hour)
	res, err := m.GarbageCollect(context.Background())
	if err != nil || !slices.Equal(res.Removed, []string{"b"}) {
		t.Errorf("removed %v (%v), want b only: a is an image volume's", res.Removed, err)
	}
}

// Under disk pressure the eviction manager has every unused image removed
// at once, whatever the usage and with garbage collection off, but not an
// image in use, pinned, the sandbox image or younger than the minimum age.
func TestDeleteUnusedImages(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := newFakeCRI(FsStats{Capacity: 1000, Available: 990},
		image("old1", 10), image("old2", 10), image("used", 10), pinned(image("pinned", 10)), image("sandbox", 10))
	f.containers = []*runtimeapi.Container{exited("c", "used")}
	m, removed := newManager(t, f, clk, Policy{HighThresholdPercent: 100, LowThresholdPercent: 80, MinAge: time.Minute}, "example.com/sandbox:tag")
	if err := m.DeleteUnusedImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.removedIDs(); len(got) != 0 {
		t.Fatalf("removed %v: every image is younger than the minimum age", got)
	}
	clk.Step(time.Minute)
	f.images["new"] = image("new", 10)
	if err := m.DeleteUnusedImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := f.removedIDs()
	slices.Sort(got)
	if !slices.Equal(got, []string{"old1", "old2"}) || *removed != 2 {
		t.Errorf("removed %v (counted %d), want old1 and old2", got, *removed)
	}
}
