package imageimport

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	imagesapi "github.com/containerd/containerd/api/services/images/v1"
	leasesapi "github.com/containerd/containerd/api/services/leases/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/cleanup"
)

const (
	// leaseTTL is how long containerd keeps a lease an agent that died
	// mid-import could not release (containerd's client's default).
	leaseTTL = 24 * time.Hour
	// maxReferences bounds the descriptors an import walks, as
	// containerd bounds them.
	maxReferences = 10_000
)

// Import implements Store, as containerd's client imports and unpacks an
// archive ("ctr images import"). Images are named by their
// io.containerd.image.name annotation, else by an
// org.opencontainers.image.ref.name that is a full reference (a bare tag
// names no image), and in a docker-save archive by its RepoTags. Content
// and snapshots are held by one lease until all are unpacked, so
// containerd's garbage collector cannot take a blob in between; the lease
// is released when Import returns, even when ctx was cancelled.
func (c *Containerd) Import(ctx context.Context, r io.Reader) (_ []Image, err error) {
	ctx = inNamespace(ctx)
	ctx, release, err := c.lease(ctx)
	if err != nil {
		return nil, fmt.Errorf("create lease: %w", err)
	}
	defer release()
	imgs, err := c.importArchive(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, im := range imgs {
		if err := c.unpack(ctx, im.target); err != nil {
			return nil, fmt.Errorf("unpack %s for snapshotter %s: %w", im.name, c.snapshotter, err)
		}
		out = append(out, Image{Name: im.name, Target: im.target.Digest.String()})
	}
	return out, nil
}

// namedImage is an image record an archive asks for.
type namedImage struct {
	name   string
	target ocispec.Descriptor
}

// lease creates a lease that expires after leaseTTL and returns ctx with
// it: what the requests made with that ctx create or write joins it. The
// returned release deletes it, with a context of its own.
func (c *Containerd) lease(ctx context.Context) (context.Context, func(), error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, nil, err
	}
	id := "minikubelet-import-" + hex.EncodeToString(rnd[:])
	_, err := c.leases.Create(ctx, &leasesapi.CreateRequest{
		ID:     id,
		Labels: map[string]string{labelGCExpire: c.clock.Now().Add(leaseTTL).Format(time.RFC3339)},
	})
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		dctx, cancel := cleanup.Context(ctx, 10*time.Second)
		defer cancel()
		if _, err := c.leases.Delete(dctx, &leasesapi.DeleteRequest{ID: id}); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot release the lease of an image import; containerd drops it when it expires", "lease", id, "expires", leaseTTL)
		}
	}
	return metadata.AppendToOutgoingContext(ctx, leaseHeader, id), release, nil
}

// importArchive writes the archive's blobs to the content store, labels
// them for the garbage collector and creates or updates the images it
// names.
func (c *Containerd) importArchive(ctx context.Context, r io.Reader) ([]namedImage, error) {
	index, err := c.importIndex(ctx, r)
	if err != nil {
		return nil, err
	}
	imgs, err := c.walk(ctx, index)
	if err != nil {
		return nil, err
	}
	for _, im := range imgs {
		if err := c.putImage(ctx, im); err != nil {
			return nil, err
		}
	}
	return imgs, nil
}

// dockerManifest is an entry of a docker-save archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// importIndex writes every file of the tar stream r to the content store
// but oci-layout and manifest.json, and returns the descriptor of the
// archive's index: an OCI layout's index.json, or one it writes for a
// docker-save archive (containerd's archive.ImportIndex).
func (c *Containerd) importIndex(ctx context.Context, r io.Reader) (ocispec.Descriptor, error) {
	var (
		tr       = tar.NewReader(r)
		layout   ocispec.ImageLayout
		mfsts    []dockerManifest
		blobs    = map[string]blob{}
		symlinks = map[string]string{}
		buf      = make([]byte, writeChunk)
	)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		name := path.Clean(hdr.Name)
		if hdr.Typeflag == tar.TypeSymlink {
			// A docker-save layer may link to another; nothing is extracted
			// to disk, the name only looks up a blob.
			symlinks[name] = path.Join(path.Dir(hdr.Name), hdr.Linkname) //nolint:gosec // G305: see above
		}
		//nolint:staticcheck // TypeRegA: old tar writers still emit it.
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
			continue
		}
		switch name {
		case ocispec.ImageLayoutFile:
			if err := decodeJSON(tr, &layout); err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("untar oci layout %q: %w", hdr.Name, err)
			}
		case "manifest.json":
			if err := decodeJSON(tr, &mfsts); err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("untar manifest %q: %w", hdr.Name, err)
			}
		default:
			b, err := c.writeBlob(ctx, ingestRef("tar-"+name), tr, hdr.Size, buf)
			if err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("failed to ingest %q: %w", hdr.Name, err)
			}
			blobs[name] = b
		}
	}
	if layout.Version != "" {
		if layout.Version != ocispec.ImageLayoutVersion {
			return ocispec.Descriptor{}, fmt.Errorf("unsupported OCI version %s", layout.Version)
		}
		idx, ok := blobs[ocispec.ImageIndexFile]
		if !ok {
			return ocispec.Descriptor{}, fmt.Errorf("missing index.json in OCI layout %s", ocispec.ImageLayoutVersion)
		}
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: idx.digest, Size: idx.size}, nil
	}
	if mfsts == nil {
		return ocispec.Descriptor{}, errors.New("unrecognized image format")
	}
	for name, target := range symlinks {
		b, ok := blobs[target]
		if !ok {
			return ocispec.Descriptor{}, fmt.Errorf("no target for symlink layer from %q to %q", name, target)
		}
		blobs[name] = b
	}
	return c.dockerIndex(ctx, mfsts, blobs)
}

// decodeJSON decodes the JSON of r, at most 20 MiB.
func decodeJSON(r io.Reader, v any) error {
	return json.NewDecoder(io.LimitReader(r, maxJSONBlob)).Decode(v)
}

// writeJSON writes v, as JSON, to the content store.
func (c *Containerd) writeJSON(ctx context.Context, v any, mediaType string) (ocispec.Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	// One message: the buffer holds it all.
	buf := make([]byte, min(len(data)+1, writeChunk))
	b, err := c.writeBlob(ctx, ingestRef("manifest-"+digest.FromBytes(data).String()), bytes.NewReader(data), int64(len(data)), buf)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: b.digest, Size: b.size}, nil
}

// walk walks the index and what it references, as containerd's client
// does on import: it names an image for each manifest of the index that
// carries a name, and labels each blob with its children, filtered to
// this node's platform, so that the garbage collector keeps what the
// images need. It fails if the platform filter leaves nothing.
func (c *Containerd) walk(ctx context.Context, index ocispec.Descriptor) ([]namedImage, error) {
	var (
		imgs  []namedImage
		refs  int
		empty = true
		visit func(descs []ocispec.Descriptor) error
	)
	visit = func(descs []ocispec.Descriptor) error {
		if refs += len(descs); refs > maxReferences {
			return fmt.Errorf("too many descriptors (limit %d)", maxReferences)
		}
		for _, d := range descs {
			var (
				children []ocispec.Descriptor
				err      error
			)
			if d.Digest == index.Digest {
				children, err = c.topManifests(ctx, d, &imgs)
			} else {
				children, err = c.children(ctx, d)
			}
			if err != nil {
				return err
			}
			children = c.filterPlatforms(children)
			if len(children) == 0 {
				continue
			}
			empty = false
			if err := c.setLabels(ctx, d.Digest, childGCLabels(children)); err != nil {
				return err
			}
			if err := visit(children); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit([]ocispec.Descriptor{index}); err != nil {
		return nil, err
	}
	if empty {
		return nil, errors.New("image might be filtered out")
	}
	return imgs, nil
}

// topManifests returns the manifests of the archive's index, and adds to
// imgs an image for each that carries a name.
func (c *Containerd) topManifests(ctx context.Context, index ocispec.Descriptor, imgs *[]namedImage) ([]ocispec.Descriptor, error) {
	data, err := c.readBlob(ctx, index)
	if err != nil {
		return nil, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, err
	}
	for _, m := range idx.Manifests {
		name := m.Annotations[annotationImageName]
		if name == "" {
			if ref := m.Annotations[ocispec.AnnotationRefName]; ref != "" {
				name = fullReference(ref)
			}
		}
		if name != "" {
			*imgs = append(*imgs, namedImage{name: name, target: m})
		}
	}
	return idx.Manifests, nil
}

// children returns what a manifest (config and layers) or an index
// (manifests) references; other blobs have none.
func (c *Containerd) children(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	switch {
	case isManifestType(d.MediaType):
		var m ocispec.Manifest
		if err := c.readDocument(ctx, d, &m); err != nil {
			return nil, err
		}
		return append([]ocispec.Descriptor{m.Config}, m.Layers...), nil
	case isIndexType(d.MediaType):
		var idx ocispec.Index
		if err := c.readDocument(ctx, d, &idx); err != nil {
			return nil, err
		}
		return idx.Manifests, nil
	}
	return nil, nil
}

// readDocument reads the manifest or index d into v, checking that it is
// what its media type says.
func (c *Containerd) readDocument(ctx context.Context, d ocispec.Descriptor, v any) error {
	data, err := c.readBlob(ctx, d)
	if err != nil {
		return err
	}
	if err := validateMediaType(data, d.MediaType); err != nil {
		return fmt.Errorf("invalid desc %s: %w", d.Digest, err)
	}
	return json.Unmarshal(data, v)
}

// filterPlatforms keeps the descriptors without a platform or of one this
// node runs.
func (c *Containerd) filterPlatforms(descs []ocispec.Descriptor) []ocispec.Descriptor {
	var out []ocispec.Descriptor
	for _, d := range descs {
		if d.Platform == nil || c.platform.Match(*d.Platform) {
			out = append(out, d)
		}
	}
	return out
}

// putImage points image im.name at im.target, creating it if it is new.
func (c *Containerd) putImage(ctx context.Context, im namedImage) error {
	rec := &imagesapi.Image{Name: im.name, Target: descToProto(im.target)}
	_, err := c.images.Update(ctx, &imagesapi.UpdateImageRequest{Image: rec, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"target"}}})
	if isCode(err, codes.NotFound) {
		_, err = c.images.Create(ctx, &imagesapi.CreateImageRequest{Image: rec})
	}
	if err != nil {
		return fmt.Errorf("image %s: %w", im.name, err)
	}
	return nil
}
