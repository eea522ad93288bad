package volumes

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageVolumeSupport is what the container runtime does with image
// volumes: a CRI Mount that names an image (containerd 2.1 and later,
// CRI-O 1.31 and later mount it read-only from the image's layers), and
// the Mount's image_sub_path (containerd 2.2, CRI-O 1.33). A runtime that
// predates them ignores the fields, and would run the container without
// the volume, or with the whole image where a subPath was asked for: such
// pods are refused instead. The zero value supports nothing.
type ImageVolumeSupport struct {
	Mount   bool
	SubPath bool
	// Runtime names the runtime and its version in refusals, e.g.
	// "containerd 1.6.20".
	Runtime string
}

// imagePlugin sets up image volumes: nothing on the host. The container
// runtime mounts the image, read-only, when it creates each container
// that mounts the volume; the pod worker has pulled it by then (under the
// volume's pullPolicy and the pod's imagePullSecrets) and puts the image
// it resolved into the mount (ResolveImageMounts).
type imagePlugin struct {
	cfg *Config
}

func (p *imagePlugin) dirName() string { return "" }

func (p *imagePlugin) setUp(_ context.Context, req setUpRequest) (volume, error) {
	support := p.cfg.ImageVolumes
	if !support.Mount {
		return volume{}, fmt.Errorf("image volumes need a container runtime that mounts images through CRI (containerd 2.1 or later, CRI-O 1.31 or later); this node's %s does not, and the pod does not run without the volume", runtimeName(support))
	}
	if req.vol.Image.Reference == "" {
		return volume{}, errors.New("image: reference is required")
	}
	return volume{image: req.vol.Image.Reference, readOnly: true}, nil
}

func runtimeName(s ImageVolumeSupport) string {
	if s.Runtime == "" {
		return "container runtime"
	}
	return s.Runtime
}

// imageMount is m, the mount of an image volume of image ref, made an
// image mount (the runtime's, no host path), read-only, of sub inside the
// image when sub is not empty.
func (pv *PodVolumes) imageMount(m *runtimeapi.Mount, ref, sub string) (*runtimeapi.Mount, error) {
	m.HostPath = ""
	m.Readonly = true
	m.Image = &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: ref}
	if sub != "" {
		if support := pv.m.cfg.ImageVolumes; !support.SubPath {
			return nil, fmt.Errorf("subPath %q of an image volume needs a container runtime that mounts part of an image (containerd 2.2 or later, CRI-O 1.33 or later); this node's %s would mount the whole image", sub, runtimeName(support))
		}
		m.ImageSubPath = sub
	}
	return m, nil
}

// ResolveImageMounts replaces, in the image mounts among mounts, the image
// reference of the volume (what the pod's spec names) with the image the
// pod worker ensured for it, resolved[reference] (an image ID). A
// reference it has no image for is an error: the container would run
// with an image nobody pulled for it.
func ResolveImageMounts(mounts []*runtimeapi.Mount, resolved map[string]string) error {
	for _, m := range mounts {
		if m.Image == nil {
			continue
		}
		ref, ok := resolved[m.Image.UserSpecifiedImage]
		if !ok || ref == "" {
			return fmt.Errorf("image volume at %s: image %q was not pulled", m.ContainerPath, m.Image.UserSpecifiedImage)
		}
		m.Image.Image = ref
	}
	return nil
}
