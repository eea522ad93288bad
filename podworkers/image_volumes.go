package podworkers

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/events"
)

// Image volumes (volumes[].image): the volumes package refuses them on a
// runtime that cannot mount images, and makes the CRI image mounts; the
// syncer pulls their images, as the kubelet does, before the containers
// that mount them start: under the volume's pullPolicy, with the pod's
// imagePullSecrets and the node's credentials, with the same pull
// back-off per pod and image as a container's image, and events about the
// pod. A container whose image volume cannot be had waits with that
// pull's reason (ErrImagePull, ImagePullBackOff, ErrImageNeverPull, ...)
// and a message naming the volume; the others start.

// imageVolumesMounted returns the pod's image volumes that the containers
// cs mount, in the pod's order.
func imageVolumesMounted(pod *v1.Pod, cs []containerToStart) []*v1.Volume {
	mounted := map[string]bool{}
	for _, cts := range cs {
		for _, vm := range cts.Container.VolumeMounts {
			mounted[vm.Name] = true
		}
	}
	var out []*v1.Volume
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Image != nil && mounted[v.Name] {
			out = append(out, v)
		}
	}
	return out
}

// ensureImageVolumes ensures the image of each of pod's image volumes
// vols, by volume name.
func (s *Syncer) ensureImageVolumes(ctx context.Context, pod *v1.Pod, vols []*v1.Volume, sandboxConfig *runtimeapi.PodSandboxConfig) map[string]imageResult {
	out := make(map[string]imageResult, len(vols))
	for _, v := range vols {
		want := imageWant{image: v.Image.Reference, policy: v.Image.PullPolicy, ref: events.Pod(pod), logKey: "volume", logName: v.Name}
		out[v.Name] = s.ensureImage(ctx, pod, want, sandboxConfig)
	}
	return out
}

// heldByVolume returns, when one of the image volumes container c mounts
// could not be had, the result that holds c back, its message naming the
// volume; nil when c mounts none or all of them are there.
func (p *imagePrefetch) heldByVolume(c *v1.Container) *imageResult {
	for _, vm := range c.VolumeMounts {
		r, ok := p.volumes[vm.Name]
		if !ok || (r.err == nil && r.retryAfter == 0) {
			continue
		}
		held := r
		if held.waiting.Message != "" {
			held.waiting.Message = fmt.Sprintf("image volume %q: %s", vm.Name, held.waiting.Message)
		}
		if held.err != nil {
			held.err = fmt.Errorf("image volume %q: %w", vm.Name, held.err)
		}
		return &held
	}
	return nil
}

// volumeImages maps the reference of each image volume whose image is
// there to the image the runtime mounts (volumes.ResolveImageMounts).
func (p *imagePrefetch) volumeImages(pod *v1.Pod) map[string]string {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if r, ok := p.volumes[v.Name]; ok && v.Image != nil && r.err == nil && r.retryAfter == 0 && r.ref != "" {
			out[v.Image.Reference] = r.ref
		}
	}
	return out
}
