package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// imageResult is the outcome of ensureImage for one container: the image
// to create it from, or why it waits. retryAfter > 0 means the image's
// pull failed or backs off: not an error, the pod is synced again then.
type imageResult struct {
	ref        string
	waiting    kubecontainer.Waiting
	err        error
	retryAfter time.Duration
	// image is the image's status when it was present and not pulled
	// again; it saves asking the runtime for the image's user.
	image *runtimeapi.Image
}

// imagePrefetch holds the images of the containers to start (results, by
// container name) and of the image volumes they mount (volumes, by volume
// name); both are written by the prefetching goroutine and may be read
// once done is closed.
type imagePrefetch struct {
	done    chan struct{}
	results map[string]imageResult
	volumes map[string]imageResult
}

// prefetchImages ensures, in one goroutine, the image of every container to
// start, in order, then those of the image volumes they mount.
func (s *Syncer) prefetchImages(ctx context.Context, pod *v1.Pod, cs []containerToStart, sandboxConfig *runtimeapi.PodSandboxConfig) *imagePrefetch {
	p := &imagePrefetch{done: make(chan struct{}), results: make(map[string]imageResult, len(cs))}
	go func() {
		defer close(p.done)
		for _, cts := range cs {
			p.results[cts.Container.Name] = s.ensureImage(ctx, pod, containerImage(pod, cts.Container), sandboxConfig)
		}
		p.volumes = s.ensureImageVolumes(ctx, pod, imageVolumesMounted(pod, cs), sandboxConfig)
	}()
	return p
}
