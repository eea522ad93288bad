package imageimport

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// tarEntry is a file of a tarball, or a symlink if link is set.
type tarEntry struct {
	name, data, link string
}

func tarBytes(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}
		if e.link != "" {
			hdr = &tar.Header{Name: e.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.link}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func descOf(mediaType string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

// testImage is an OCI image of two layers, the first gzip-compressed, for
// arch: its blobs, by digest, and descriptors.
type testImage struct {
	blobs    map[digest.Digest][]byte
	manifest ocispec.Descriptor
	config   ocispec.Descriptor
	layers   []ocispec.Descriptor
	diffIDs  []digest.Digest
}

func newTestImage(t *testing.T, arch, content string) testImage {
	t.Helper()
	plain1 := tarBytes(t, tarEntry{name: "etc/one", data: content + "1"})
	plain2 := tarBytes(t, tarEntry{name: "etc/two", data: content + "2"})
	l1, l2 := gzipBytes(t, plain1), plain2
	im := testImage{
		blobs:   map[digest.Digest][]byte{},
		layers:  []ocispec.Descriptor{descOf(ocispec.MediaTypeImageLayerGzip, l1), descOf(ocispec.MediaTypeImageLayer, l2)},
		diffIDs: []digest.Digest{digest.FromBytes(plain1), digest.FromBytes(plain2)},
	}
	config := jsonBytes(t, ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: arch},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: im.diffIDs},
	})
	im.config = descOf(ocispec.MediaTypeImageConfig, config)
	manifest := jsonBytes(t, ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: im.config, Layers: im.layers})
	im.manifest = descOf(ocispec.MediaTypeImageManifest, manifest)
	for _, b := range [][]byte{l1, l2, config, manifest} {
		im.blobs[digest.FromBytes(b)] = b
	}
	return im
}

// ociLayout is the tarball of an OCI layout holding blobs, with index.
func ociLayout(t *testing.T, index ocispec.Index, blobs ...map[digest.Digest][]byte) []byte {
	t.Helper()
	entries := []tarEntry{{name: "oci-layout", data: `{"imageLayoutVersion":"1.0.0"}`}, {name: "index.json", data: string(jsonBytes(t, index))}}
	for _, bs := range blobs {
		for d, b := range bs {
			entries = append(entries, tarEntry{name: "blobs/sha256/" + d.Encoded(), data: string(b)})
		}
	}
	return tarBytes(t, entries...)
}

func newTestStore(t *testing.T) (*fakeContainerd, *Containerd, *clocktesting.FakePassiveClock) {
	t.Helper()
	f, endpoint := startFakeContainerd(t)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c, err := NewContainerd(endpoint, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return f, c, clk
}

// checkUnpacked fails t unless im's layers are committed snapshots, each
// on the one below, applied from the right layer, labelled as containerd
// labels them, with no extraction snapshot left.
func checkUnpacked(t *testing.T, f *fakeContainerd, layers []ocispec.Descriptor, diffIDs []digest.Digest, config digest.Digest) {
	t.Helper()
	snapshots, _, _, _ := f.state()
	parent := ""
	for i := range diffIDs {
		name := identity.ChainID(diffIDs[:i+1]).String()
		sn, ok := snapshots[name]
		if !ok || !sn.committed || sn.parent != parent || sn.applied != diffIDs[i] {
			t.Errorf("snapshot of layer %d (%s): %+v (present %v), want committed on %q, applied %s", i, name, sn, ok, parent, diffIDs[i])
		}
		parent = name
		if _, labels, _ := f.blob(layers[i].Digest); labels[labelUncompressed] != diffIDs[i].String() {
			t.Errorf("layer %d labels %v, want %s=%s", i, labels, labelUncompressed, diffIDs[i])
		}
	}
	for key, sn := range snapshots {
		if !sn.committed {
			t.Errorf("extraction snapshot %q left behind", key)
		}
	}
	if _, labels, _ := f.blob(config); labels["containerd.io/gc.ref.snapshot.overlayfs"] != parent {
		t.Errorf("config labels %v, want containerd.io/gc.ref.snapshot.overlayfs=%s", labels, parent)
	}
}

// checkLeases fails t unless every write and snapshot was under one
// lease, expiring in a day, and that lease was released.
func checkLeases(t *testing.T, f *fakeContainerd, clk *clocktesting.FakePassiveClock, wantDeleted int) {
	t.Helper()
	_, live, deleted, outside := f.state()
	if len(live) != 0 || len(deleted) != wantDeleted {
		t.Errorf("leases live %v, deleted %d; want none live and %d deleted", live, len(deleted), wantDeleted)
	}
	if len(outside) != 0 {
		t.Errorf("written outside a lease: %v", outside)
	}
	want := clk.Now().Add(24 * time.Hour).Format(time.RFC3339)
	for _, l := range deleted {
		if l.labels[labelGCExpire] != want {
			t.Errorf("lease %s labels %v, want %s=%s", l.id, l.labels, labelGCExpire, want)
		}
	}
}

// An OCI layout's images, named by annotation or full reference, go in
// with every blob labelled for the garbage collector, their layers are
// unpacked into a chain of snapshots, and the lease is released; Has
// then finds them. Importing it again unpacks nothing again.
func TestContainerdImportOCILayout(t *testing.T) {
	ctx := context.Background()
	f, c, clk := newTestStore(t)
	im := newTestImage(t, runtime.GOARCH, "a")
	named := func(annotations map[string]string) ocispec.Descriptor {
		d := im.manifest
		d.Annotations = annotations
		return d
	}
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		named(map[string]string{annotationImageName: "example.com/app:1", ocispec.AnnotationRefName: "1"}),
		named(map[string]string{ocispec.AnnotationRefName: "busybox:1.36"}),
		named(map[string]string{ocispec.AnnotationRefName: "latest"}), // a bare tag names nothing
	}}
	archive := ociLayout(t, index, im.blobs)

	imgs, err := c.Import(ctx, bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	want := []Image{{Name: "example.com/app:1", Target: im.manifest.Digest.String()}, {Name: "docker.io/library/busybox:1.36", Target: im.manifest.Digest.String()}}
	if !slices.Equal(imgs, want) {
		t.Fatalf("imported %v, want %v", imgs, want)
	}
	for _, img := range want {
		rec := f.image(img.Name)
		if rec.GetTarget().GetDigest() != img.Target || rec.GetTarget().GetMediaType() != ocispec.MediaTypeImageManifest {
			t.Errorf("image record %s: %v", img.Name, rec)
		}
	}
	// Each blob names its children in the labels containerd's garbage
	// collector follows.
	_, labels, _ := f.blob(digest.FromBytes(jsonBytes(t, index)))
	for _, k := range []string{"containerd.io/gc.ref.content.m.0", "containerd.io/gc.ref.content.m.1", "containerd.io/gc.ref.content.m.2"} {
		if labels[k] != im.manifest.Digest.String() {
			t.Errorf("index labels %v: want %s=%s", labels, k, im.manifest.Digest)
		}
	}
	_, labels, _ = f.blob(im.manifest.Digest)
	wantLabels := map[string]string{
		"containerd.io/gc.ref.content.config": im.config.Digest.String(),
		"containerd.io/gc.ref.content.l.0":    im.layers[0].Digest.String(),
		"containerd.io/gc.ref.content.l.1":    im.layers[1].Digest.String(),
	}
	if !maps.Equal(labels, wantLabels) {
		t.Errorf("manifest labels %v, want %v", labels, wantLabels)
	}
	checkUnpacked(t, f, im.layers, im.diffIDs, im.config.Digest)
	checkLeases(t, f, clk, 1)

	for _, tt := range []struct {
		img  Image
		want bool
	}{
		{want[0], true},
		{want[1], true},
		{Image{Name: "example.com/app:1", Target: "sha256:" + strings.Repeat("0", 64)}, false},
		{Image{Name: "example.com/other:1", Target: im.manifest.Digest.String()}, false},
	} {
		if got, err := c.Has(ctx, tt.img); err != nil || got != tt.want {
			t.Errorf("Has(%v) = %v, %v; want %v", tt.img, got, err, tt.want)
		}
	}

	// Again: the layers are there, nothing is applied again.
	prepares := f.prepareCount()
	imgs, err = c.Import(ctx, bytes.NewReader(archive))
	if err != nil || !slices.Equal(imgs, want) {
		t.Fatalf("second import: %v, %v", imgs, err)
	}
	if n := f.prepareCount() - prepares; n != 0 {
		t.Errorf("the second import prepared %d snapshots, want 0", n)
	}
	checkLeases(t, f, clk, 2)

	// Once the garbage collector took the snapshot, the image is not
	// there (unpacked) any more.
	f.removeSnapshot(identity.ChainID(im.diffIDs).String())
	if got, err := c.Has(ctx, want[0]); err != nil || got {
		t.Errorf("Has after the snapshot went = %v, %v; want false", got, err)
	}
}

// A multi-platform image: only this node's platform is labelled and
// unpacked; the image points at the index.
func TestContainerdImportMultiPlatform(t *testing.T) {
	ctx := context.Background()
	f, c, clk := newTestStore(t)
	other := "s390x"
	if runtime.GOARCH == other {
		other = "riscv64"
	}
	mine, theirs := newTestImage(t, runtime.GOARCH, "mine"), newTestImage(t, other, "theirs")
	withPlatform := func(d ocispec.Descriptor, arch string) ocispec.Descriptor {
		d.Platform = &ocispec.Platform{OS: "linux", Architecture: arch}
		return d
	}
	nested := jsonBytes(t, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		withPlatform(theirs.manifest, other), withPlatform(mine.manifest, runtime.GOARCH),
	}})
	nestedDesc := descOf(ocispec.MediaTypeImageIndex, nested)
	top := nestedDesc
	top.Annotations = map[string]string{annotationImageName: "example.com/multi:1"}
	archive := ociLayout(t, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, Manifests: []ocispec.Descriptor{top}},
		mine.blobs, theirs.blobs, map[digest.Digest][]byte{nestedDesc.Digest: nested})

	imgs, err := c.Import(ctx, bytes.NewReader(archive))
	want := []Image{{Name: "example.com/multi:1", Target: nestedDesc.Digest.String()}}
	if err != nil || !slices.Equal(imgs, want) {
		t.Fatalf("imported %v, %v; want %v", imgs, err, want)
	}
	_, labels, _ := f.blob(nestedDesc.Digest)
	if want := map[string]string{"containerd.io/gc.ref.content.m.0": mine.manifest.Digest.String()}; !maps.Equal(labels, want) {
		t.Errorf("nested index labels %v, want %v (this platform's manifest only)", labels, want)
	}
	if _, labels, _ := f.blob(theirs.manifest.Digest); len(labels) != 0 {
		t.Errorf("the other platform's manifest was labelled: %v", labels)
	}
	checkUnpacked(t, f, mine.layers, mine.diffIDs, mine.config.Digest)
	if snapshots, _, _, _ := f.state(); len(snapshots) != 2 {
		t.Errorf("%d snapshots, want this platform's 2", len(snapshots))
	}
	checkLeases(t, f, clk, 1)
	if ok, err := c.Has(ctx, want[0]); err != nil || !ok {
		t.Errorf("Has = %v, %v", ok, err)
	}
}

// A docker-save archive: a docker schema 2 manifest is made for each
// image, of its config and layers (a plain layer of which the store holds
// a compressed blob is that blob; a layer may be a symlink to another),
// named by its RepoTags, normalized, and unpacked.
func TestContainerdImportDockerSave(t *testing.T) {
	ctx := context.Background()
	f, c, clk := newTestStore(t)
	plain1 := tarBytes(t, tarEntry{name: "bin/sh", data: "shell"})
	plain2 := tarBytes(t, tarEntry{name: "etc/motd", data: "hello"})
	gz2 := gzipBytes(t, plain2)
	diffIDs := []digest.Digest{digest.FromBytes(plain1), digest.FromBytes(plain2), digest.FromBytes(plain1)}
	config := jsonBytes(t, ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffIDs}})
	// An earlier pull left layer 1 compressed in the store.
	pulled := gzipBytes(t, plain1)
	pulledDigest := f.putBlob(pulled, map[string]string{labelUncompressed: diffIDs[0].String()})
	archive := tarBytes(t,
		tarEntry{name: "l1/layer.tar", data: string(plain1)},
		tarEntry{name: "l2/layer.tar", data: string(gz2)},
		tarEntry{name: "l3/layer.tar", link: "../l1/layer.tar"},
		tarEntry{name: "cfg.json", data: string(config)},
		tarEntry{name: "manifest.json", data: `[{"Config":"cfg.json","RepoTags":["busybox:1.36","example.com/tool:2"],"Layers":["l1/layer.tar","l2/layer.tar","l3/layer.tar"]}]`},
		tarEntry{name: "repositories", data: "{}"},
	)

	imgs, err := c.Import(ctx, bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 || imgs[0].Name != "docker.io/library/busybox:1.36" || imgs[1].Name != "example.com/tool:2" || imgs[0].Target != imgs[1].Target {
		t.Fatalf("imported %v", imgs)
	}
	data, labels, ok := f.blob(digest.Digest(imgs[0].Target))
	if !ok {
		t.Fatalf("no manifest %s", imgs[0].Target)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	wantLayers := []ocispec.Descriptor{
		descOf(mediaTypeDockerLayerGzip, pulled),
		descOf(mediaTypeDockerLayerGzip, gz2),
		descOf(mediaTypeDockerLayerGzip, pulled),
	}
	if m.MediaType != mediaTypeDockerManifest || m.SchemaVersion != 2 || m.Config.MediaType != mediaTypeDockerConfig || m.Config.Digest != digest.FromBytes(config) || !descsEqual(m.Layers, wantLayers) {
		t.Errorf("manifest %s, want layers %v", data, wantLayers)
	}
	if labels["containerd.io/gc.ref.content.l.0"] != pulledDigest.String() || labels["containerd.io/gc.ref.content.l.2"] != pulledDigest.String() {
		t.Errorf("manifest labels %v", labels)
	}
	if f.image("example.com/tool:2").GetTarget().GetMediaType() != mediaTypeDockerManifest {
		t.Errorf("image record %v", f.image("example.com/tool:2"))
	}
	checkUnpacked(t, f, m.Layers, diffIDs, m.Config.Digest)
	checkLeases(t, f, clk, 1)

	// The index names each tag, with the platform of the config.
	var idx ocispec.Index
	for _, d := range f.blobDigests() {
		if data, _, _ := f.blob(d); bytes.Contains(data, []byte(`"manifests"`)) {
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(idx.Manifests) != 2 {
		t.Fatalf("index %+v", idx)
	}
	for i, tag := range []string{"1.36", "2"} {
		d := idx.Manifests[i]
		if d.Platform == nil || d.Platform.Architecture != runtime.GOARCH || d.Platform.OS != "linux" || d.Annotations[ocispec.AnnotationRefName] != tag || d.Annotations[annotationImageName] != imgs[i].Name {
			t.Errorf("index entry %d: %+v %+v", i, d, d.Platform)
		}
	}
}

// What fails is reported, leaves no extraction snapshot behind and
// releases the lease, also when ctx is cancelled mid-import.
func TestContainerdImportFails(t *testing.T) {
	im := newTestImage(t, runtime.GOARCH, "a")
	named := im.manifest
	named.Annotations = map[string]string{annotationImageName: "example.com/app:1"}
	good := ociLayout(t, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, Manifests: []ocispec.Descriptor{named}}, im.blobs)
	otherPlatform := named
	otherPlatform.Platform = &ocispec.Platform{OS: "plan9", Architecture: runtime.GOARCH}

	for _, tt := range []struct {
		name    string
		archive []byte
		// onApply runs at each Apply; cancel cancels the import's ctx.
		onApply func(ctx context.Context, cancel context.CancelFunc) error
		want    string
	}{
		{
			name:    "apply fails",
			archive: good,
			onApply: func(context.Context, context.CancelFunc) error { return errFake },
			want:    "unpack example.com/app:1 for snapshotter overlayfs: apply layer " + im.diffIDs[0].String(),
		},
		{
			name:    "cancelled while applying",
			archive: good,
			onApply: func(ctx context.Context, cancel context.CancelFunc) error {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			},
			want: "context canceled",
		},
		{
			name:    "neither layout nor manifest.json",
			archive: tarBytes(t, tarEntry{name: "README", data: "hi"}),
			want:    "import: unrecognized image format",
		},
		{
			name:    "config missing",
			archive: tarBytes(t, tarEntry{name: "manifest.json", data: `[{"Config":"cfg.json","RepoTags":["a:1"],"Layers":[]}]`}),
			want:    `import: image config "cfg.json" not found`,
		},
		{
			name:    "manifest missing",
			archive: ociLayout(t, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, Manifests: []ocispec.Descriptor{named}}),
			want:    "not found",
		},
		{
			name:    "another platform only",
			archive: ociLayout(t, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, Manifests: []ocispec.Descriptor{otherPlatform}}, im.blobs),
			want:    "import: image might be filtered out",
		},
		{
			name:    "unsupported layout version",
			archive: tarBytes(t, tarEntry{name: "oci-layout", data: `{"imageLayoutVersion":"2.0.0"}`}),
			want:    "import: unsupported OCI version 2.0.0",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, c, clk := newTestStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.onApply != nil {
				f.setOnApply(func(sctx context.Context, _ digest.Digest) error { return tt.onApply(sctx, cancel) })
			}
			_, err := c.Import(ctx, bytes.NewReader(tt.archive))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import: %v, want an error with %q", err, tt.want)
			}
			if tt.onApply != nil && !errors.Is(ctx.Err(), context.Canceled) && !strings.Contains(err.Error(), errFake.Error()) {
				t.Errorf("the cause is lost: %v", err)
			}
			snapshots, _, _, _ := f.state()
			for key, sn := range snapshots {
				if !sn.committed {
					t.Errorf("extraction snapshot %q left behind", key)
				}
			}
			checkLeases(t, f, clk, 1)
		})
	}
}

func TestContainerdUnreachable(t *testing.T) {
	c, err := NewContainerd("unix:///nonexistent/containerd.sock", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Import(ctx, bytes.NewReader(nil)); err == nil || !strings.Contains(err.Error(), "create lease") {
		t.Errorf("Import: %v, want a lease error", err)
	}
	if _, err := c.Has(ctx, Image{Name: "a:1"}); err == nil {
		t.Error("Has of an unreachable containerd: no error")
	}
}

func TestChildGCLabels(t *testing.T) {
	d := func(mt, hex string, annotations map[string]string) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: mt, Digest: digest.Digest("sha256:" + strings.Repeat(hex, 64)), Annotations: annotations}
	}
	got := childGCLabels([]ocispec.Descriptor{
		d(ocispec.MediaTypeImageConfig, "c", nil),
		d(mediaTypeDockerLayerGzip, "1", nil),
		d(ocispec.MediaTypeImageLayerZstd, "2", nil),
		d(ocispec.MediaTypeImageManifest, "3", nil),
		d(ocispec.MediaTypeImageIndex, "4", nil),
		d("application/vnd.example+json", "5", nil),
		d(ocispec.MediaTypeImageManifest, "6", map[string]string{annotationManifestSubject: "x"}),
		d(mediaTypeDockerConfig, "7", nil),
	})
	want := map[string]string{
		"containerd.io/gc.ref.content.config":                       "sha256:" + strings.Repeat("c", 64),
		"containerd.io/gc.ref.content.l.0":                          "sha256:" + strings.Repeat("1", 64),
		"containerd.io/gc.ref.content.l.1":                          "sha256:" + strings.Repeat("2", 64),
		"containerd.io/gc.ref.content.m.0":                          "sha256:" + strings.Repeat("3", 64),
		"containerd.io/gc.ref.content.0":                            "sha256:" + strings.Repeat("4", 64),
		"containerd.io/gc.ref.content.1":                            "sha256:" + strings.Repeat("5", 64),
		"containerd.io/gc.ref.content.referrer.sha256.666666666666": "sha256:" + strings.Repeat("6", 64),
		"containerd.io/gc.ref.content.config1":                      "sha256:" + strings.Repeat("7", 64),
	}
	if !maps.Equal(got, want) {
		t.Errorf("childGCLabels = %v\nwant %v", got, want)
	}
}

func TestOCIRefName(t *testing.T) {
	checkMapping(t, "ociRefName", ociRefName, map[string]string{
		"docker.io/library/busybox:1.36":          "1.36",
		"localhost:5000/x/app:2":                  "2",
		"example.com/app@sha256:abc":              "@sha256:abc",
		"example.com/app:1@sha256:abc":            "1@sha256:abc",
		"example.com/app":                         "",
		"no-host":                                 "",
		"http://example.com/app:1":                "http://example.com/app:1",
		"docker.io/library/busybox:latest":        "latest",
		"registry.example.com:443/a/b/c:v1.2.3-x": "v1.2.3-x",
	})
}

func TestIsCompressed(t *testing.T) {
	for _, tt := range []struct {
		head []byte
		want bool
	}{
		{[]byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0}, true},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0}, true},
		{[]byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0}, true},
		{[]byte("etc/\x00\x00\x00\x00\x00\x00"), false},
		{nil, false},
	} {
		if got := isCompressed(tt.head); got != tt.want {
			t.Errorf("isCompressed(% x) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

func descsEqual(a, b []ocispec.Descriptor) bool {
	return slices.EqualFunc(a, b, func(x, y ocispec.Descriptor) bool {
		return x.MediaType == y.MediaType && x.Digest == y.Digest && x.Size == y.Size
	})
}
