package imageimport

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The media types and labels of containerd's image store that an import
// deals with (containerd's core/images and labels packages).
const (
	mediaTypeDockerLayer            = "application/vnd.docker.image.rootfs.diff.tar"
	mediaTypeDockerLayerGzip        = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	mediaTypeDockerLayerForeign     = "application/vnd.docker.image.rootfs.foreign.diff.tar"
	mediaTypeDockerLayerForeignGzip = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
	mediaTypeDockerLayerZstd        = "application/vnd.docker.image.rootfs.diff.tar.zstd"
	mediaTypeDockerConfig           = "application/vnd.docker.container.image.v1+json"
	mediaTypeDockerManifest         = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerManifestList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeCheckpoint             = "application/vnd.containerd.container.criu.checkpoint.criu.tar"
	mediaTypeCheckpointConfig       = "application/vnd.containerd.container.checkpoint.config.v1+proto"

	// annotationImageName names an image in an index.
	annotationImageName = "io.containerd.image.name"
	// annotationManifestSubject marks a referrer in an index.
	annotationManifestSubject = "io.containerd.manifest.subject"

	// labelUncompressed, on a compressed layer blob, is the digest of its
	// uncompressed content (its diff ID).
	labelUncompressed = "containerd.io/uncompressed"
	// labelGCSnapshotPrefix, on an image config, followed by a
	// snapshotter's name, is the chain ID of the image's unpacked
	// snapshot, which the garbage collector keeps while the config stays.
	labelGCSnapshotPrefix = "containerd.io/gc.ref.snapshot."
	// labelGCExpire, on a lease, is when the garbage collector may drop it.
	labelGCExpire = "containerd.io/gc.expire"
)

func isManifestType(mt string) bool {
	return mt == mediaTypeDockerManifest || mt == ocispec.MediaTypeImageManifest
}

func isIndexType(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == mediaTypeDockerManifestList
}

func isConfigType(mt string) bool {
	return mt == mediaTypeDockerConfig || mt == ocispec.MediaTypeImageConfig
}

func isKnownConfig(mt string) bool {
	return isConfigType(mt) || mt == mediaTypeCheckpoint || mt == mediaTypeCheckpointConfig
}

// isLayerType reports whether mt is that of a layer, compressed or not
// (a "+suffix" of a docker type, e.g. +encrypted, is allowed).
func isLayerType(mt string) bool {
	if strings.HasPrefix(mt, "application/vnd.oci.image.layer.") {
		return true
	}
	base, _, _ := strings.Cut(mt, "+")
	switch base {
	case mediaTypeDockerLayer, mediaTypeDockerLayerGzip, mediaTypeDockerLayerForeign, mediaTypeDockerLayerForeignGzip, mediaTypeDockerLayerZstd:
		return true
	}
	return false
}

// childGCLabel is the prefix of the label by which a parent blob keeps
// child from the garbage collector: a prefix ending in "." takes the
// child's index among its siblings of that prefix, as does a second child
// of the config prefix (containerd's images.ChildGCLabels).
func childGCLabel(child ocispec.Descriptor) string {
	if _, ok := child.Annotations[annotationManifestSubject]; ok {
		return "containerd.io/gc.ref.content.referrer.sha256."
	}
	switch {
	case isKnownConfig(child.MediaType):
		return "containerd.io/gc.ref.content.config"
	case isManifestType(child.MediaType):
		return "containerd.io/gc.ref.content.m."
	case isLayerType(child.MediaType):
		return "containerd.io/gc.ref.content.l."
	}
	return "containerd.io/gc.ref.content."
}

// childGCLabels are the labels by which a blob keeps its children.
func childGCLabels(children []ocispec.Descriptor) map[string]string {
	labels := map[string]string{}
	seen := map[string]int{}
	for _, ch := range children {
		key := childGCLabel(ch)
		n := seen[key]
		seen[key] = n + 1
		switch {
		case strings.HasSuffix(key, ".sha256."):
			key += ch.Digest.Encoded()[:min(12, len(ch.Digest.Encoded()))]
		case n > 0 || strings.HasSuffix(key, "."):
			key = fmt.Sprintf("%s%d", key, n)
		}
		labels[key] = ch.Digest.String()
	}
	return labels
}

// validateMediaType refuses a blob whose content contradicts the media
// type it was reached by (an index posing as a manifest or the reverse),
// or a docker schema 1 manifest, which containerd no longer handles.
func validateMediaType(b []byte, mt string) error {
	var doc struct {
		MediaType string          `json:"mediaType,omitempty"`
		Config    json.RawMessage `json:"config,omitempty"`
		Layers    json.RawMessage `json:"layers,omitempty"`
		Manifests json.RawMessage `json:"manifests,omitempty"`
		FSLayers  json.RawMessage `json:"fsLayers,omitempty"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	switch {
	case len(doc.FSLayers) != 0:
		return errors.New("media-type: schema 1 not supported")
	case isManifestType(mt) && (len(doc.Manifests) != 0 || isIndexType(doc.MediaType)):
		return fmt.Errorf("media-type: expected manifest but found index (%s)", mt)
	case isIndexType(mt) && (len(doc.Config) != 0 || len(doc.Layers) != 0 || isManifestType(doc.MediaType)):
		return fmt.Errorf("media-type: expected index but found manifest (%s)", mt)
	}
	return nil
}
