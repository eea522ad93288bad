package imageimport

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// fakeStore imports what a tarball's index.json (annotations) or
// manifest.json (RepoTags) names.
type fakeStore struct {
	mu      sync.Mutex
	images  map[string]string // name -> target
	imports int
	// failImport fails the import of archives naming this image.
	failImport string
}

var _ Store = (*fakeStore)(nil)

func (s *fakeStore) Import(_ context.Context, r io.Reader) ([]Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imports++
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the store was given no plain tarball: %w", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[hdr.Name] = data
	}
	var out []Image
	if data, ok := files["index.json"]; ok {
		var idx struct {
			Manifests []struct {
				Digest      string
				Annotations map[string]string
			}
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			return nil, err
		}
		for _, m := range idx.Manifests {
			if name := m.Annotations["io.containerd.image.name"]; name != "" {
				out = append(out, Image{Name: name, Target: m.Digest})
			}
		}
	} else if data, ok := files["manifest.json"]; ok {
		var mfs []struct {
			Config   string
			RepoTags []string
		}
		if err := json.Unmarshal(data, &mfs); err != nil {
			return nil, err
		}
		for _, m := range mfs {
			for _, tag := range m.RepoTags {
				out = append(out, Image{Name: tag, Target: "sha256:manifest-of-" + m.Config})
			}
		}
	} else {
		return nil, errors.New("unrecognized image format")
	}
	for _, img := range out {
		if img.Name == s.failImport {
			return nil, fmt.Errorf("apply layer error for %q: no space left on device", img.Name)
		}
	}
	for _, img := range out {
		s.images[img.Name] = img.Target
	}
	return out, nil
}

func (s *fakeStore) Has(_ context.Context, img Image) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.images[img.Name] == img.Target, nil
}

func (s *fakeStore) importCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.imports
}

// ociArchive is an OCI layout naming name at target.
func ociArchive(name, target string) map[string]string {
	return map[string]string{
		"oci-layout":                 `{"imageLayoutVersion":"1.0.0"}`,
		"index.json":                 fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"digest":%q,"annotations":{"io.containerd.image.name":%q}}]}`, target, name),
		"blobs/sha256/" + target[7:]: "{}",
	}
}

// dockerArchive is a docker-save tarball tagging one image tag.
func dockerArchive(tag, config string) map[string]string {
	return map[string]string{
		"manifest.json":   fmt.Sprintf(`[{"Config":%q,"RepoTags":[%q],"Layers":["l/layer.tar"]}]`, config, tag),
		config:            "{}",
		"l/layer.tar":     "layer",
		"repositories":    "{}",
		"some/other/file": "x",
	}
}

func writeTar(t *testing.T, path string, files map[string]string, gz bool) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	entries := make([]tarEntry, len(names))
	for i, n := range names {
		entries[i] = tarEntry{name: n, data: files[n]}
	}
	b := tarBytes(t, entries...)
	if gz {
		b = gzipBytes(t, b)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	target1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	target2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func TestImportAll(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "images")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTar(t, filepath.Join(dir, "app.tar"), ociArchive("example.com/app:1", target1), false)
	writeTar(t, filepath.Join(dir, "tool.tar"), dockerArchive("example.com/tool:2", "cfg.json"), true)
	if err := os.WriteFile(filepath.Join(dir, "bad.tar"), []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTar(t, filepath.Join(dir, "empty.tar"), map[string]string{"README": "no image here"}, false)
	writeTar(t, filepath.Join(dir, "unnamed.tar"), map[string]string{"oci-layout": "{}", "index.json": `{"manifests":[{"digest":"` + target2 + `"}]}`}, false)
	// Ignored: a dot file (one being copied in), not *.tar, a directory.
	writeTar(t, filepath.Join(dir, ".incoming.tar"), ociArchive("example.com/partial:1", target2), false)
	writeTar(t, filepath.Join(dir, "app.tar.bak"), ociArchive("example.com/old:1", target2), false)
	if err := os.Mkdir(filepath.Join(dir, "dir.tar"), 0o755); err != nil {
		t.Fatal(err)
	}

	store := &fakeStore{images: map[string]string{}}
	cfg := Config{Dir: dir, StatePath: filepath.Join(root, "image_import_state.json"), Store: store}
	res := ImportAll(ctx, cfg)
	want := Result{Imported: []string{"app.tar", "tool.tar"}, Failed: []string{"bad.tar", "empty.tar", "unnamed.tar"}}
	if !equal(res, want) {
		t.Fatalf("first start: %+v, want %+v", res, want)
	}
	if store.images["example.com/app:1"] != target1 || store.images["example.com/tool:2"] == "" || len(store.images) != 2 {
		t.Fatalf("store holds %v", store.images)
	}

	// A restart skips what is there; the bad files fail again.
	imports := store.importCount()
	res = ImportAll(ctx, cfg)
	if want := (Result{Skipped: []string{"app.tar", "tool.tar"}, Failed: want.Failed}); !equal(res, want) {
		t.Fatalf("second start: %+v, want %+v", res, want)
	}
	if n := store.importCount() - imports; n != 1 {
		t.Fatalf("second start made %d imports, want 1 (unnamed.tar, which reached the store and named nothing)", n)
	}

	// A new version of app.tar, and tool's image gone from the runtime:
	// both are imported again; a removed archive leaves the state.
	writeTar(t, filepath.Join(dir, "app.tar"), ociArchive("example.com/app:1", target2), false)
	delete(store.images, "example.com/tool:2")
	for _, n := range []string{"bad.tar", "empty.tar", "unnamed.tar"} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	res = ImportAll(ctx, cfg)
	if want := (Result{Imported: []string{"app.tar", "tool.tar"}}); !equal(res, want) {
		t.Fatalf("third start: %+v, want %+v", res, want)
	}
	if store.images["example.com/app:1"] != target2 {
		t.Fatalf("app:1 points at %s, want the new archive's %s", store.images["example.com/app:1"], target2)
	}
	st, err := loadState(cfg.StatePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != 2 || st.Files["app.tar"].Images[0].Target != target2 {
		t.Fatalf("state %+v", st)
	}
}

// A failing import is reported and the next archive still goes in; a
// missing directory or a corrupt state file is no failure.
func TestImportAllCopes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if res := ImportAll(ctx, Config{Dir: filepath.Join(root, "none"), StatePath: filepath.Join(root, "state"), Store: &fakeStore{}}); !equal(res, Result{}) {
		t.Fatalf("missing directory: %+v", res)
	}
	dir := filepath.Join(root, "images")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTar(t, filepath.Join(dir, "a.tar"), ociArchive("example.com/a:1", target1), false)
	writeTar(t, filepath.Join(dir, "b.tar"), ociArchive("example.com/b:1", target2), false)
	statePath := filepath.Join(root, "state")
	if err := os.WriteFile(statePath, []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{images: map[string]string{}, failImport: "example.com/a:1"}
	res := ImportAll(ctx, Config{Dir: dir, StatePath: statePath, Store: store})
	if want := (Result{Imported: []string{"b.tar"}, Failed: []string{"a.tar"}}); !equal(res, want) {
		t.Fatalf("%+v, want %+v", res, want)
	}
	if _, err := loadState(statePath); err != nil {
		t.Fatalf("the state was not rewritten: %v", err)
	}
}

// fakeCRIImages sees an image from its visibleAfter'th ImageStatus on.
type fakeCRIImages struct {
	mu           sync.Mutex
	calls        int
	visibleAfter int
}

func (f *fakeCRIImages) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls < f.visibleAfter {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:x", RepoTags: []string{spec.Image}}}, nil
}

// ImportAll returns once CRI sees the imported image, or after
// VisibleTimeout.
func TestImportAllWaitsForCRI(t *testing.T) {
	for _, tt := range []struct {
		name         string
		visibleAfter int
		wantCalls    int
	}{
		{"seen at the third ask", 3, 3},
		{"never seen: gives up after the timeout", 1000, 11},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTar(t, filepath.Join(root, "a.tar"), ociArchive("example.com/a:1", target1), false)
			clk := clocktesting.NewFakeClock(time.Now())
			cri := &fakeCRIImages{visibleAfter: tt.visibleAfter}
			done := make(chan Result)
			go func() {
				done <- ImportAll(context.Background(), Config{Dir: root, StatePath: filepath.Join(root, "state"), Store: &fakeStore{images: map[string]string{}}, Images: cri, Clock: clk, VisibleTimeout: time.Second})
			}()
			var res Result
			polltest.True(t, 5*time.Second, "ImportAll to return, the clock stepped whenever it waits", func() bool {
				select {
				case res = <-done:
					return true
				default:
				}
				if clk.HasWaiters() {
					clk.Step(visiblePoll)
				}
				return false
			})
			if !equal(res, Result{Imported: []string{"a.tar"}}) {
				t.Fatalf("%+v", res)
			}
			if cri.calls != tt.wantCalls {
				t.Fatalf("asked CRI %d times, want %d", cri.calls, tt.wantCalls)
			}
		})
	}
}

// The archive digest is that of the index files, whatever the tarball's
// order, compression or other content.
func TestArchiveDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, files map[string]string, gz bool) string {
		p := filepath.Join(dir, name)
		writeTar(t, p, files, gz)
		return p
	}
	digestOf := func(p string) (string, error) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		d, err := archiveDigest(f)
		return d.String(), err
	}
	oci := ociArchive("example.com/a:1", target1)
	plain := write("plain.tar", oci, false)
	gz := write("gz.tar", oci, true)
	more := map[string]string{"extra": "x"}
	for k, v := range oci {
		more[k] = v
	}
	extra := write("extra.tar", more, false)
	other := write("other.tar", ociArchive("example.com/a:2", target1), false)

	d1, err := digestOf(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{gz, extra} {
		if d, err := digestOf(p); err != nil || d != d1 {
			t.Errorf("%s: digest %s, %v; want %s", filepath.Base(p), d, err, d1)
		}
	}
	if d, _ := digestOf(other); d == d1 {
		t.Errorf("another index.json has the same digest %s", d)
	}
	if _, err := digestOf(write("none.tar", map[string]string{"a": "b"}, false)); !errors.Is(err, errNotImageArchive) {
		t.Errorf("a tarball without index files: %v, want errNotImageArchive", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.tar"), bytes.Repeat([]byte("junk"), 300), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := digestOf(filepath.Join(dir, "junk.tar")); err == nil {
		t.Error("junk has a digest")
	}
}

func TestFullReference(t *testing.T) {
	checkMapping(t, "fullReference", fullReference, map[string]string{
		"example.com/app:1.0":   "example.com/app:1.0",
		"busybox:1.36":          "docker.io/library/busybox:1.36",
		"localhost/x/pause:3.1": "localhost/x/pause:3.1",
		"library/busybox":       "docker.io/library/busybox:latest",
		"1.36":                  "",
		"latest":                "",
		"Bad/Name:1":            "",
	})
}

// checkMapping fails t for each input of cases that f, named name, does
// not map to its value.
func checkMapping(t *testing.T, name string, f func(string) string, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		if got := f(in); got != want {
			t.Errorf("%s(%q) = %q, want %q", name, in, got, want)
		}
	}
}

func equal(a, b Result) bool {
	return slices.Equal(a.Imported, b.Imported) && slices.Equal(a.Skipped, b.Skipped) && slices.Equal(a.Failed, b.Failed)
}
