package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// annotationImageName is containerd's annotation for an image's full name
// (containerd's images.AnnotationImageName); containerd's importers prefer
// it over the OCI ref.name, which holds only the tag.
const annotationImageName = "io.containerd.image.name"

// blob is one content-addressed file of the layout.
type blob struct {
	desc ocispec.Descriptor
	data []byte
}

// writeImage builds the image and writes the layout tarball to out.
func writeImage(spec imageSpec, out string) error {
	for _, ref := range spec.refs {
		if _, err := splitRef(ref); err != nil {
			return err
		}
	}
	l, err := buildLayer(spec.entries)
	if err != nil {
		return err
	}
	layerBlob := newBlob(ocispec.MediaTypeImageLayerGzip, l.gz)
	configBlob, err := jsonBlob(ocispec.MediaTypeImageConfig, imageConfig(spec, l.diffID))
	if err != nil {
		return err
	}
	manifestBlob, err := jsonBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configBlob.desc,
		Layers:    []ocispec.Descriptor{layerBlob.desc},
	})
	if err != nil {
		return err
	}
	index := indexFor(manifestBlob.desc, spec)
	return writeLayout(out, index, []blob{layerBlob, configBlob, manifestBlob})
}

// imageConfig is the OCI image config for spec with one layer.
func imageConfig(spec imageSpec, diffID string) ocispec.Image {
	created := epoch
	return ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: spec.arch, OS: spec.os},
		Config: ocispec.ImageConfig{
			User:       spec.user,
			Env:        spec.env,
			Entrypoint: spec.entrypoint,
			Cmd:        spec.cmd,
			WorkingDir: spec.workdir,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.Digest(diffID)}},
		History: []ocispec.History{{
			Created:   &created,
			CreatedBy: "minikubelet test/images/mkimage",
		}},
	}
}

// indexFor is index.json naming the one manifest after each of
// spec.refs (checked by splitRef), one entry per name.
func indexFor(manifest ocispec.Descriptor, spec imageSpec) ocispec.Index {
	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
	}
	for _, ref := range spec.refs {
		tag, _ := splitRef(ref)
		d := manifest
		d.Platform = &ocispec.Platform{Architecture: spec.arch, OS: spec.os}
		d.Annotations = map[string]string{
			annotationImageName:       ref,
			ocispec.AnnotationRefName: tag,
		}
		index.Manifests = append(index.Manifests, d)
	}
	return index
}

// newBlob wraps data with its descriptor.
func newBlob(mediaType string, data []byte) blob {
	return blob{
		desc: ocispec.Descriptor{
			MediaType: mediaType,
			Digest:    digest.Digest(fmt.Sprintf("sha256:%x", sha256.Sum256(data))),
			Size:      int64(len(data)),
		},
		data: data,
	}
}

// jsonBlob marshals v into a blob.
func jsonBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, fmt.Errorf("marshal %s: %w", mediaType, err)
	}
	return newBlob(mediaType, data), nil
}

// writeLayout writes the OCI layout tarball to out via a temporary file in
// the same directory, so a reader never sees a partial tarball.
func writeLayout(out string, index ocispec.Index, blobs []blob) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".mkimage-*")
	if err != nil {
		return fmt.Errorf("create temporary file for %q: %w", out, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := writeLayoutTar(tmp, index, blobs); err != nil {
		return fmt.Errorf("write %q: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod %q: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %q: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("rename %q to %q: %w", tmp.Name(), out, err)
	}
	return nil
}

// writeLayoutTar writes oci-layout, index.json and the blobs, sorted.
func writeLayoutTar(f *os.File, index ocispec.Index, blobs []blob) error {
	layoutJSON, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return fmt.Errorf("marshal oci-layout: %w", err)
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return fmt.Errorf("marshal index.json: %w", err)
	}
	slices.SortFunc(blobs, func(a, b blob) int { return compareDigest(a.desc.Digest, b.desc.Digest) })
	tw := tar.NewWriter(f)
	if err := writeDir(tw, "blobs/"); err != nil {
		return err
	}
	if err := writeDir(tw, "blobs/sha256/"); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := writeFile(tw, "blobs/sha256/"+b.desc.Digest.Encoded(), b.data); err != nil {
			return err
		}
	}
	if err := writeFile(tw, ocispec.ImageLayoutFile, layoutJSON); err != nil {
		return err
	}
	if err := writeFile(tw, ocispec.ImageIndexFile, indexJSON); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close layout tar: %w", err)
	}
	return nil
}

func compareDigest(a, b digest.Digest) int { return strings.Compare(string(a), string(b)) }

func writeDir(tw *tar.Writer, name string) error {
	hdr := &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write layout entry %q: %w", name, err)
	}
	return nil
}

func writeFile(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write layout entry %q: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("write layout entry %q: %w", name, err)
	}
	return nil
}
