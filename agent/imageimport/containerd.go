package imageimport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
	diffapi "github.com/containerd/containerd/api/services/diff/v1"
	imagesapi "github.com/containerd/containerd/api/services/images/v1"
	leasesapi "github.com/containerd/containerd/api/services/leases/v1"
	snapshotsapi "github.com/containerd/containerd/api/services/snapshots/v1"
	"github.com/containerd/platforms"
	"github.com/opencontainers/image-spec/identity"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/imageref"
)

const (
	// criNamespace is the containerd namespace the CRI plugin serves.
	criNamespace = "k8s.io"
	// defaultSnapshotter is containerd's default snapshotter on Linux,
	// CRI's unless configured otherwise.
	defaultSnapshotter = "overlayfs"
	// namespaceHeader and leaseHeader are the gRPC metadata containerd
	// reads a request's namespace and lease from.
	namespaceHeader = "containerd-namespace"
	leaseHeader     = "containerd-lease"
	// maxMsgSize is containerd's own gRPC message limit.
	maxMsgSize = 16 << 20
)

// Containerd is the Store of a containerd, reached through containerd's
// own gRPC API (the content, images, leases, diff and snapshots services,
// v1, which containerd 1.6 and 2.x serve): CRI has no verb to import an
// image. It does what containerd's client does for "ctr images import":
// blobs into the content store with the labels its garbage collector
// follows, image records, and each image's layers unpacked into
// snapshots. Its methods may be called from one goroutine at a time.
type Containerd struct {
	conn        *grpc.ClientConn
	content     contentapi.ContentClient
	images      imagesapi.ImagesClient
	leases      leasesapi.LeasesClient
	diff        diffapi.DiffClient
	snapshots   snapshotsapi.SnapshotsClient
	snapshotter string
	// platform picks the manifest of a multi-platform image, as
	// containerd's client does (platforms.Default).
	platform platforms.MatchComparer
	clock    clock.PassiveClock
}

var _ Store = (*Containerd)(nil)

// NewContainerd returns the Store of the containerd whose CRI endpoint is
// endpoint (unix:///path/to/containerd.sock: containerd serves its own API
// and CRI on one socket). Images are imported into namespace k8s.io and
// unpacked for containerd's default snapshotter (overlayfs on Linux), which
// is CRI's unless configured otherwise. It does not dial: a containerd
// that is down shows in the first call's error. clk dates the lease that
// holds an import's content (the real clock if nil). Close it when done.
func NewContainerd(endpoint string, clk clock.PassiveClock) (*Containerd, error) {
	address := strings.TrimPrefix(endpoint, "unix://")
	if address == "" {
		return nil, errors.New("containerd endpoint: empty")
	}
	conn, err := grpc.NewClient("unix://"+address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("containerd connection to %s: %w", address, err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Containerd{
		conn:        conn,
		content:     contentapi.NewContentClient(conn),
		images:      imagesapi.NewImagesClient(conn),
		leases:      leasesapi.NewLeasesClient(conn),
		diff:        diffapi.NewDiffClient(conn),
		snapshots:   snapshotsapi.NewSnapshotsClient(conn),
		snapshotter: defaultSnapshotter,
		platform:    platforms.Default(),
		clock:       clk,
	}, nil
}

// Close closes the connection.
func (c *Containerd) Close() error { return c.conn.Close() }

// Has implements Store.
func (c *Containerd) Has(ctx context.Context, img Image) (bool, error) {
	ctx = inNamespace(ctx)
	resp, err := c.images.Get(ctx, &imagesapi.GetImageRequest{Name: img.Name})
	if isCode(err, codes.NotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get image %s: %w", img.Name, err)
	}
	target := descFromProto(resp.GetImage().GetTarget())
	if target.Digest.String() != img.Target {
		return false, nil
	}
	fs, err := c.rootFS(ctx, target)
	if err != nil {
		return false, fmt.Errorf("check image %s is unpacked for snapshotter %s: %w", img.Name, c.snapshotter, err)
	}
	if len(fs.diffIDs) == 0 {
		// An image without layers has no snapshot: containerd's client
		// finds it unpacked only if a snapshot "" exists, which none does.
		return false, nil
	}
	_, err = c.snapshots.Stat(ctx, &snapshotsapi.StatSnapshotRequest{Snapshotter: c.snapshotter, Key: identity.ChainID(fs.diffIDs).String()})
	if isCode(err, codes.NotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check image %s is unpacked for snapshotter %s: %w", img.Name, c.snapshotter, err)
	}
	return true, nil
}

// inNamespace makes ctx's requests address containerd's k8s.io namespace.
func inNamespace(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, namespaceHeader, criNamespace)
}

// isCode reports whether err is a gRPC status error with code.
func isCode(err error, code codes.Code) bool {
	if err == nil {
		return false
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == code
}

// fullReference turns an OCI layout's org.opencontainers.image.ref.name
// into an image name when it is a full reference ("example.com/app:1",
// "busybox:1.36"), normalized as the CRI normalizes a pod's image; a bare
// tag ("1.36", "latest") names no image.
func fullReference(refName string) string {
	if !strings.ContainsAny(refName, "/:@") {
		return ""
	}
	named, err := imageref.ParseDocker(refName)
	if err != nil {
		return ""
	}
	return named.String()
}
