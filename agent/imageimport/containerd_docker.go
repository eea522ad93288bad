package imageimport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/minikubelet/minikubelet/internal/imageref"
)

// dockerIndex writes the manifest of each image of a docker-save archive
// and an index of them, and returns the index; blobs are the archive's
// files, by name, already in the content store. It builds them as
// containerd's importer does, byte for byte, so that an image gets the
// target digest "ctr images import" would give it: a docker schema 2
// manifest whose layers are the archive's (or, where the store holds a
// compressed blob of a plain layer, that blob), the platform of its
// config, and per RepoTag an index entry named by the tag, normalized.
func (c *Containerd) dockerIndex(ctx context.Context, mfsts []dockerManifest, blobs map[string]blob) (ocispec.Descriptor, error) {
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}}
	for _, mfst := range mfsts {
		cfg, ok := blobs[path.Clean(mfst.Config)]
		if !ok {
			return ocispec.Descriptor{}, fmt.Errorf("image config %q not found", mfst.Config)
		}
		config := ocispec.Descriptor{MediaType: mediaTypeDockerConfig, Digest: cfg.digest, Size: cfg.size}
		layers, err := c.dockerLayers(ctx, mfst.Layers, blobs)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("failed to resolve layers: %w", err)
		}
		manifest := struct {
			SchemaVersion int                  `json:"schemaVersion"`
			MediaType     string               `json:"mediaType"`
			Config        ocispec.Descriptor   `json:"config"`
			Layers        []ocispec.Descriptor `json:"layers"`
		}{
			SchemaVersion: 2,
			MediaType:     mediaTypeDockerManifest,
			Config:        config,
			Layers:        layers,
		}
		desc, err := c.writeJSON(ctx, manifest, manifest.MediaType)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("write docker manifest: %w", err)
		}
		platform, err := c.configPlatform(ctx, config)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("unable to resolve platform: %w", err)
		}
		desc.Platform = &platform
		if len(mfst.RepoTags) == 0 {
			idx.Manifests = append(idx.Manifests, desc)
			continue
		}
		for _, tag := range mfst.RepoTags {
			named, err := imageref.ParseDocker(tag)
			if err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("normalize image ref %q: %w", tag, err)
			}
			d := desc
			d.Annotations = map[string]string{
				annotationImageName:       named.String(),
				ocispec.AnnotationRefName: ociRefName(named.String()),
			}
			idx.Manifests = append(idx.Manifests, d)
		}
	}
	return c.writeJSON(ctx, idx, ocispec.MediaTypeImageIndex)
}

// dockerLayers returns the descriptors of a docker-save image's layers,
// given by file name. A layer is the archive's file, typed as compressed
// or not by its first bytes, unless the store holds a compressed blob of
// it (labelled containerd.io/uncompressed with its digest), which then
// stands for it, as in containerd's importer.
func (c *Containerd) dockerLayers(ctx context.Context, files []string, blobs map[string]blob) ([]ocispec.Descriptor, error) {
	if len(files) == 0 {
		return []ocispec.Descriptor{}, nil
	}
	layers := make([]ocispec.Descriptor, len(files))
	heads := make([][]byte, len(files))
	digests := make([]digest.Digest, len(files))
	for i, f := range files {
		b, ok := blobs[path.Clean(f)]
		if !ok {
			return nil, fmt.Errorf("layer %q not found", f)
		}
		layers[i] = ocispec.Descriptor{Digest: b.digest, Size: b.size}
		heads[i], digests[i] = b.head, b.digest
	}
	compressed, err := c.compressedBlobs(ctx, digests)
	if err != nil {
		return nil, fmt.Errorf("failure checking for compressed blobs: %w", err)
	}
	for i := range layers {
		if info, ok := compressed[layers[i].Digest]; ok {
			d := digest.Digest(info.GetDigest())
			head, err := c.read(ctx, d, headSize)
			if err != nil {
				return nil, fmt.Errorf("failed to detect media type of layer: %w", err)
			}
			layers[i] = ocispec.Descriptor{Digest: d, Size: info.GetSize()}
			heads[i] = head
		}
		layers[i].MediaType = mediaTypeDockerLayer
		if isCompressed(heads[i]) {
			layers[i].MediaType = mediaTypeDockerLayerGzip
		}
	}
	return layers, nil
}

// configPlatform returns the platform an image config declares,
// normalized.
func (c *Containerd) configPlatform(ctx context.Context, config ocispec.Descriptor) (ocispec.Platform, error) {
	data, err := c.readBlob(ctx, config)
	if err != nil {
		return ocispec.Platform{}, err
	}
	// The platform's fields are the config's own (architecture, os,
	// variant, os.version, os.features).
	var p ocispec.Platform
	if err := json.Unmarshal(data, &p); err != nil {
		return ocispec.Platform{}, err
	}
	return platforms.Normalize(p), nil
}

// ociRefName is the org.opencontainers.image.ref.name containerd gives a
// normalized reference: what follows the repository (the tag, or
// "@digest").
func ociRefName(name string) string {
	u, err := url.Parse("dummy://" + name)
	if err != nil || u.Host == "" || strings.Contains(name, "://") {
		return name
	}
	if i := strings.IndexAny(u.Path, ":@"); i >= 0 {
		return strings.TrimPrefix(u.Path[i:], ":")
	}
	return ""
}
