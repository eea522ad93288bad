package imageimport

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
	diffapi "github.com/containerd/containerd/api/services/diff/v1"
	imagesapi "github.com/containerd/containerd/api/services/images/v1"
	leasesapi "github.com/containerd/containerd/api/services/leases/v1"
	snapshotsapi "github.com/containerd/containerd/api/services/snapshots/v1"
	"github.com/containerd/containerd/api/types"
	"github.com/opencontainers/go-digest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// fakeContainerd serves the part of containerd's API the Containerd store
// uses, over a unix socket, keeping what it is given in memory. Like
// containerd, it refuses a request without a namespace, adds what a
// request under a lease writes or commits to that lease, keeps a blob's
// labels when it is written again, and answers AlreadyExists to a commit
// of a blob it has.
type fakeContainerd struct {
	mu        sync.Mutex
	blobs     map[digest.Digest]*fakeBlob
	images    map[string]*imagesapi.Image
	leases    map[string]*fakeLease
	snapshots map[string]*fakeSnapshot
	// deletedLeases are the leases deleted, in order.
	deletedLeases []fakeLease
	// prepares counts Prepare calls.
	prepares int
	// outsideLease lists the writes and snapshot changes made without a
	// live lease.
	outsideLease []string
	// onApply, if set, runs at each Apply, with the layer's digest; an
	// error it returns fails the Apply.
	onApply func(ctx context.Context, layer digest.Digest) error
}

type fakeBlob struct {
	data   []byte
	labels map[string]string
}

type fakeLease struct {
	id        string
	labels    map[string]string
	resources []string
}

type fakeSnapshot struct {
	parent    string
	committed bool
	applied   digest.Digest // the diff ID of what was applied to it
}

// startFakeContainerd serves a fakeContainerd on a socket in a temporary
// directory and returns it and the endpoint; both stop at the test's end.
func startFakeContainerd(t *testing.T) (*fakeContainerd, string) {
	t.Helper()
	f := &fakeContainerd{
		blobs:     map[digest.Digest]*fakeBlob{},
		images:    map[string]*imagesapi.Image{},
		leases:    map[string]*fakeLease{},
		snapshots: map[string]*fakeSnapshot{},
	}
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// Every request must name the namespace.
	s := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := checkNamespace(ctx); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if err := checkNamespace(ss.Context()); err != nil {
				return err
			}
			return handler(srv, ss)
		}))
	contentapi.RegisterContentServer(s, fakeContent{f: f})
	imagesapi.RegisterImagesServer(s, fakeImages{f: f})
	leasesapi.RegisterLeasesServer(s, fakeLeases{f: f})
	diffapi.RegisterDiffServer(s, fakeDiff{f: f})
	snapshotsapi.RegisterSnapshotsServer(s, fakeSnapshots{f: f})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return f, "unix://" + sock
}

// header returns the value of gRPC metadata key of ctx.
func header(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func checkNamespace(ctx context.Context) error {
	if ns := header(ctx, namespaceHeader); ns != criNamespace {
		return status.Errorf(codes.FailedPrecondition, "namespace %q, want %q", ns, criNamespace)
	}
	return nil
}

// leased adds resource to ctx's lease; f.mu is held.
func (f *fakeContainerd) leased(ctx context.Context, resource string) {
	l, ok := f.leases[header(ctx, leaseHeader)]
	if !ok {
		f.outsideLease = append(f.outsideLease, resource)
		return
	}
	l.resources = append(l.resources, resource)
}

// blob returns a copy of blob d's data and labels.
func (f *fakeContainerd) blob(d digest.Digest) ([]byte, map[string]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.blobs[d]
	if !ok {
		return nil, nil, false
	}
	labels := map[string]string{}
	for k, v := range b.labels {
		labels[k] = v
	}
	return b.data, labels, true
}

// image returns image record name.
func (f *fakeContainerd) image(name string) *imagesapi.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images[name]
}

// blobDigests returns the digests of the blobs held.
func (f *fakeContainerd) blobDigests() []digest.Digest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.blobs))
}

// putBlob stores data as a blob with labels, as an earlier pull would.
func (f *fakeContainerd) putBlob(data []byte, labels map[string]string) digest.Digest {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := digest.FromBytes(data)
	f.blobs[d] = &fakeBlob{data: data, labels: labels}
	return d
}

type fakeContent struct {
	contentapi.UnimplementedContentServer
	f *fakeContainerd
}

func (s fakeContent) Write(stream contentapi.Content_WriteServer) error {
	ctx := stream.Context()
	var (
		ref string
		buf bytes.Buffer
	)
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		if ref == "" {
			if req.GetRef() == "" {
				return status.Error(codes.InvalidArgument, "first message must have a reference")
			}
			ref = req.GetRef()
		}
		if req.GetOffset() != int64(buf.Len()) {
			return status.Errorf(codes.OutOfRange, "write @%d must occur at current offset %d", req.GetOffset(), buf.Len())
		}
		buf.Write(req.GetData())
		resp := &contentapi.WriteContentResponse{Action: req.GetAction(), Offset: int64(buf.Len())}
		if req.GetAction() != contentapi.WriteAction_COMMIT {
			if err := stream.Send(resp); err != nil {
				return err
			}
			continue
		}
		if req.GetTotal() != 0 && req.GetTotal() != int64(buf.Len()) {
			return status.Errorf(codes.FailedPrecondition, "%q failed size validation: %d != %d", ref, buf.Len(), req.GetTotal())
		}
		d := digest.FromBytes(buf.Bytes())
		s.f.mu.Lock()
		s.f.leased(ctx, "content/"+d.String())
		_, exists := s.f.blobs[d]
		if !exists {
			s.f.blobs[d] = &fakeBlob{data: bytes.Clone(buf.Bytes()), labels: req.GetLabels()}
		}
		s.f.mu.Unlock()
		if exists {
			return status.Errorf(codes.AlreadyExists, "content %v: already exists", d)
		}
		resp.Digest = d.String()
		return stream.Send(resp)
	}
}

func (s fakeContent) Read(req *contentapi.ReadContentRequest, stream contentapi.Content_ReadServer) error {
	data, _, ok := s.f.blob(digest.Digest(req.GetDigest()))
	if !ok {
		return status.Errorf(codes.NotFound, "content digest %s: not found", req.GetDigest())
	}
	if req.GetSize() > 0 && req.GetSize() < int64(len(data)) {
		data = data[:req.GetSize()]
	}
	// Two messages, as a bigger blob would come.
	half := len(data) / 2
	for _, part := range [][]byte{data[:half], data[half:]} {
		if err := stream.Send(&contentapi.ReadContentResponse{Data: part}); err != nil {
			return err
		}
	}
	return nil
}

func (s fakeContent) Info(ctx context.Context, req *contentapi.InfoRequest) (*contentapi.InfoResponse, error) {
	data, labels, ok := s.f.blob(digest.Digest(req.GetDigest()))
	if !ok {
		return nil, status.Errorf(codes.NotFound, "content digest %s: not found", req.GetDigest())
	}
	return &contentapi.InfoResponse{Info: &contentapi.Info{Digest: req.GetDigest(), Size: int64(len(data)), Labels: labels}}, nil
}

func (s fakeContent) Update(ctx context.Context, req *contentapi.UpdateRequest) (*contentapi.UpdateResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	b, ok := s.f.blobs[digest.Digest(req.GetInfo().GetDigest())]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "content digest %s: not found", req.GetInfo().GetDigest())
	}
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	for _, p := range req.GetUpdateMask().GetPaths() {
		key, ok := strings.CutPrefix(p, "labels.")
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "cannot update %q", p)
		}
		if v, ok := req.GetInfo().GetLabels()[key]; ok {
			b.labels[key] = v
		} else {
			delete(b.labels, key)
		}
	}
	return &contentapi.UpdateResponse{Info: &contentapi.Info{Digest: req.GetInfo().GetDigest(), Size: int64(len(b.data)), Labels: b.labels}}, nil
}

// List serves the filters containerd's importer sends:
// labels."containerd.io/uncompressed"==<digest>, any of them.
func (s fakeContent) List(req *contentapi.ListContentRequest, stream contentapi.Content_ListServer) error {
	want := map[string]bool{}
	for _, f := range req.GetFilters() {
		v, ok := strings.CutPrefix(f, fmt.Sprintf("labels.%q==", labelUncompressed))
		if !ok {
			return status.Errorf(codes.InvalidArgument, "filter %q not served by the fake", f)
		}
		want[v] = true
	}
	s.f.mu.Lock()
	var infos []*contentapi.Info
	for d, b := range s.f.blobs {
		if len(want) == 0 || want[b.labels[labelUncompressed]] {
			infos = append(infos, &contentapi.Info{Digest: d.String(), Size: int64(len(b.data)), Labels: b.labels})
		}
	}
	s.f.mu.Unlock()
	return stream.Send(&contentapi.ListContentResponse{Info: infos})
}

type fakeImages struct {
	imagesapi.UnimplementedImagesServer
	f *fakeContainerd
}

func (s fakeImages) Get(ctx context.Context, req *imagesapi.GetImageRequest) (*imagesapi.GetImageResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	im, ok := s.f.images[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "image %q: not found", req.GetName())
	}
	return &imagesapi.GetImageResponse{Image: im}, nil
}

func (s fakeImages) Create(ctx context.Context, req *imagesapi.CreateImageRequest) (*imagesapi.CreateImageResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if _, ok := s.f.images[req.GetImage().GetName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "image %q: already exists", req.GetImage().GetName())
	}
	s.f.images[req.GetImage().GetName()] = req.GetImage()
	return &imagesapi.CreateImageResponse{Image: req.GetImage()}, nil
}

func (s fakeImages) Update(ctx context.Context, req *imagesapi.UpdateImageRequest) (*imagesapi.UpdateImageResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	im, ok := s.f.images[req.GetImage().GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "image %q: not found", req.GetImage().GetName())
	}
	if paths := req.GetUpdateMask().GetPaths(); len(paths) != 1 || paths[0] != "target" {
		return nil, status.Errorf(codes.InvalidArgument, "the fake updates the target only, not %v", paths)
	}
	im.Target = req.GetImage().GetTarget()
	return &imagesapi.UpdateImageResponse{Image: im}, nil
}

type fakeLeases struct {
	leasesapi.UnimplementedLeasesServer
	f *fakeContainerd
}

func (s fakeLeases) Create(ctx context.Context, req *leasesapi.CreateRequest) (*leasesapi.CreateResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if _, ok := s.f.leases[req.GetID()]; ok || req.GetID() == "" {
		return nil, status.Errorf(codes.AlreadyExists, "lease %q: already exists", req.GetID())
	}
	s.f.leases[req.GetID()] = &fakeLease{id: req.GetID(), labels: req.GetLabels()}
	return &leasesapi.CreateResponse{Lease: &leasesapi.Lease{ID: req.GetID(), Labels: req.GetLabels()}}, nil
}

func (s fakeLeases) Delete(ctx context.Context, req *leasesapi.DeleteRequest) (*emptypb.Empty, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	l, ok := s.f.leases[req.GetID()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "lease %q: not found", req.GetID())
	}
	delete(s.f.leases, req.GetID())
	s.f.deletedLeases = append(s.f.deletedLeases, *l)
	return &emptypb.Empty{}, nil
}

type fakeDiff struct {
	diffapi.UnimplementedDiffServer
	f *fakeContainerd
}

// Apply "extracts" a layer into the active snapshot its one bind mount
// names: it computes the diff ID (the digest of the layer, gunzipped if
// it is gzip-compressed) and records it on the snapshot.
func (s fakeDiff) Apply(ctx context.Context, req *diffapi.ApplyRequest) (*diffapi.ApplyResponse, error) {
	layer := digest.Digest(req.GetDiff().GetDigest())
	s.f.mu.Lock()
	onApply := s.f.onApply
	s.f.mu.Unlock()
	if onApply != nil {
		if err := onApply(ctx, layer); err != nil {
			return nil, err
		}
	}
	if len(req.GetMounts()) != 1 || req.GetMounts()[0].GetType() != "bind" {
		return nil, status.Errorf(codes.InvalidArgument, "mounts %v", req.GetMounts())
	}
	key := req.GetMounts()[0].GetSource()
	data, _, ok := s.f.blob(layer)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "content digest %s: not found", layer)
	}
	var r io.Reader = bytes.NewReader(data)
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "gunzip %s: %v", layer, err)
		}
		r = zr
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "read %s: %v", layer, err)
	}
	diffID := digest.NewDigest(digest.SHA256, h)
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	sn, ok := s.f.snapshots[key]
	if !ok || sn.committed {
		return nil, status.Errorf(codes.FailedPrecondition, "no active snapshot %q", key)
	}
	sn.applied = diffID
	return &diffapi.ApplyResponse{Applied: &types.Descriptor{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: diffID.String(), Size: int64(len(data))}}, nil
}

type fakeSnapshots struct {
	snapshotsapi.UnimplementedSnapshotsServer
	f *fakeContainerd
}

func (fakeSnapshots) checkSnapshotter(name string) error {
	if name != defaultSnapshotter {
		return status.Errorf(codes.NotFound, "snapshotter %q: not found", name)
	}
	return nil
}

func (s fakeSnapshots) Prepare(ctx context.Context, req *snapshotsapi.PrepareSnapshotRequest) (*snapshotsapi.PrepareSnapshotResponse, error) {
	if err := s.checkSnapshotter(req.GetSnapshotter()); err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.prepares++
	if _, ok := s.f.snapshots[req.GetKey()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %q: already exists", req.GetKey())
	}
	if p := req.GetParent(); p != "" {
		if sn, ok := s.f.snapshots[p]; !ok || !sn.committed {
			return nil, status.Errorf(codes.NotFound, "parent snapshot %q: not found", p)
		}
	}
	s.f.leased(ctx, "snapshots/"+req.GetKey())
	s.f.snapshots[req.GetKey()] = &fakeSnapshot{parent: req.GetParent()}
	return &snapshotsapi.PrepareSnapshotResponse{Mounts: []*types.Mount{{Type: "bind", Source: req.GetKey(), Options: []string{"rbind", "rw"}}}}, nil
}

func (s fakeSnapshots) Commit(ctx context.Context, req *snapshotsapi.CommitSnapshotRequest) (*emptypb.Empty, error) {
	if err := s.checkSnapshotter(req.GetSnapshotter()); err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	sn, ok := s.f.snapshots[req.GetKey()]
	if !ok || sn.committed {
		return nil, status.Errorf(codes.NotFound, "active snapshot %q: not found", req.GetKey())
	}
	if _, ok := s.f.snapshots[req.GetName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %q: already exists", req.GetName())
	}
	s.f.leased(ctx, "snapshots/"+req.GetName())
	delete(s.f.snapshots, req.GetKey())
	sn.committed = true
	s.f.snapshots[req.GetName()] = sn
	return &emptypb.Empty{}, nil
}

func (s fakeSnapshots) Remove(ctx context.Context, req *snapshotsapi.RemoveSnapshotRequest) (*emptypb.Empty, error) {
	if err := s.checkSnapshotter(req.GetSnapshotter()); err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if _, ok := s.f.snapshots[req.GetKey()]; !ok {
		return nil, status.Errorf(codes.NotFound, "snapshot %q: not found", req.GetKey())
	}
	delete(s.f.snapshots, req.GetKey())
	return &emptypb.Empty{}, nil
}

func (s fakeSnapshots) Stat(ctx context.Context, req *snapshotsapi.StatSnapshotRequest) (*snapshotsapi.StatSnapshotResponse, error) {
	if err := s.checkSnapshotter(req.GetSnapshotter()); err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	sn, ok := s.f.snapshots[req.GetKey()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "snapshot %q: not found", req.GetKey())
	}
	kind := snapshotsapi.Kind_ACTIVE
	if sn.committed {
		kind = snapshotsapi.Kind_COMMITTED
	}
	return &snapshotsapi.StatSnapshotResponse{Info: &snapshotsapi.Info{Name: req.GetKey(), Parent: sn.parent, Kind: kind}}, nil
}

// state returns copies of what the fake holds that tests check.
func (f *fakeContainerd) state() (snapshots map[string]fakeSnapshot, leases []string, deleted []fakeLease, outside []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	snapshots = map[string]fakeSnapshot{}
	for k, v := range f.snapshots {
		snapshots[k] = *v
	}
	for id := range f.leases {
		leases = append(leases, id)
	}
	return snapshots, leases, append([]fakeLease(nil), f.deletedLeases...), append([]string(nil), f.outsideLease...)
}

// prepareCount returns how many Prepare calls the fake served.
func (f *fakeContainerd) prepareCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prepares
}

// setOnApply sets onApply.
func (f *fakeContainerd) setOnApply(fn func(ctx context.Context, layer digest.Digest) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onApply = fn
}

// removeSnapshot removes a snapshot, as containerd's garbage collector
// would.
func (f *fakeContainerd) removeSnapshot(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.snapshots, key)
}

var errFake = errors.New("no space left on device")
