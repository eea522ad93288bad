package imageimport

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/minikubelet/minikubelet/internal/cleanup"
)

// criNamespace is the containerd namespace the CRI plugin serves.
const criNamespace = "k8s.io"

// Containerd is the Store of a containerd, reached through its Go client:
// CRI has no verb to import an image. It works against containerd 1.6 and
// 2.x. Its methods may be called from one goroutine at a time.
type Containerd struct {
	client      *client.Client
	snapshotter string
}

var _ Store = (*Containerd)(nil)

// NewContainerd returns the Store of the containerd whose CRI endpoint is
// endpoint (unix:///path/to/containerd.sock: containerd serves its own API
// and CRI on one socket). Images are imported into namespace k8s.io and
// unpacked for containerd's default snapshotter (overlayfs on Linux), which
// is CRI's unless configured otherwise. It does not dial: a containerd
// that is down shows in the first call's error. Close it when done.
func NewContainerd(endpoint string) (*Containerd, error) {
	address := strings.TrimPrefix(endpoint, "unix://")
	c, err := client.New(address, client.WithDefaultNamespace(criNamespace), client.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd client for %s: %w", address, err)
	}
	return &Containerd{client: c, snapshotter: defaults.DefaultSnapshotter}, nil
}

// Close closes the client's connection.
func (c *Containerd) Close() error { return c.client.Close() }

// Import implements Store. Images are named by their
// io.containerd.image.name annotation, else by an
// org.opencontainers.image.ref.name that is a full reference (a bare tag
// names no image), and in a docker-save archive by its RepoTags. Content
// and images are held by one lease until all are unpacked, so containerd's
// garbage collector cannot take a blob in between.
func (c *Containerd) Import(ctx context.Context, r io.Reader) (_ []Image, err error) {
	ctx, done, err := c.client.WithLease(ctx)
	if err != nil {
		return nil, fmt.Errorf("create lease: %w", err)
	}
	defer func() {
		// The lease must go even when ctx was cancelled.
		dctx, cancel := cleanup.Context(ctx, 10*time.Second)
		defer cancel()
		_ = done(dctx)
	}()
	imgs, err := c.client.Import(ctx, r, client.WithImageRefTranslator(fullReference))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, im := range imgs {
		if err := client.NewImage(c.client, im).Unpack(ctx, c.snapshotter); err != nil {
			return nil, fmt.Errorf("unpack %s for snapshotter %s: %w", im.Name, c.snapshotter, err)
		}
		out = append(out, Image{Name: im.Name, Target: im.Target.Digest.String()})
	}
	return out, nil
}

// Has implements Store.
func (c *Containerd) Has(ctx context.Context, img Image) (bool, error) {
	im, err := c.client.ImageService().Get(ctx, img.Name)
	if errdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get image %s: %w", img.Name, err)
	}
	if im.Target.Digest.String() != img.Target {
		return false, nil
	}
	unpacked, err := client.NewImage(c.client, im).IsUnpacked(ctx, c.snapshotter)
	if err != nil {
		return false, fmt.Errorf("check image %s is unpacked for snapshotter %s: %w", img.Name, c.snapshotter, err)
	}
	return unpacked, nil
}

// fullReference turns an OCI layout's org.opencontainers.image.ref.name
// into an image name when it is a full reference ("example.com/app:1",
// "busybox:1.36"), normalized as the CRI normalizes a pod's image; a bare
// tag ("1.36", "latest") names no image.
func fullReference(refName string) string {
	if !strings.ContainsAny(refName, "/:@") {
		return ""
	}
	named, err := reference.ParseDockerRef(refName)
	if err != nil {
		return ""
	}
	return named.String()
}
