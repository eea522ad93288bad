package fakecri

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageSize is the size every image has: CRI clients refuse an image of
// size 0.
const imageSize = 1 << 20

// PullImage "pulls" any image at once: it is known from then on, with
// size imageSize.
func (i *imageServer) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	defer i.s.forget()
	ref, err := i.s.images.PullImage(ctx, req.GetImage(), req.GetAuth(), req.GetSandboxConfig())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.PullImageResponse{ImageRef: ref}, nil
}

// ImageStatus answers an image's status, or none when it was not pulled.
func (i *imageServer) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	defer i.s.forget()
	resp, err := i.s.images.ImageStatus(ctx, req.GetImage(), req.GetVerbose())
	return resp, grpcError(err)
}

// ListImages lists the images pulled.
func (i *imageServer) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	defer i.s.forget()
	images, err := i.s.images.ListImages(ctx, req.GetFilter())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.ListImagesResponse{Images: images}, nil
}

// RemoveImage forgets an image; removing one not there succeeds.
func (i *imageServer) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	defer i.s.forget()
	if err := i.s.images.RemoveImage(ctx, req.GetImage()); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the state directory's filesystem, which must
// exist, with the images' usage (imageSize each, one inode each).
func (i *imageServer) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	defer i.s.forget()
	var st unix.Statfs_t
	if err := unix.Statfs(i.s.cfg.StateDir, &st); err != nil {
		return nil, grpcError(fmt.Errorf("statfs %s: %w", i.s.cfg.StateDir, err))
	}
	images, err := i.s.images.ListImages(ctx, nil)
	if err != nil {
		return nil, grpcError(err)
	}
	n := uint64(len(images))
	usage := &runtimeapi.FilesystemUsage{
		Timestamp:  i.s.cfg.Clock.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: i.s.cfg.StateDir},
		UsedBytes:  &runtimeapi.UInt64Value{Value: n * imageSize},
		InodesUsed: &runtimeapi.UInt64Value{Value: n},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{usage}, ContainerFilesystems: []*runtimeapi.FilesystemUsage{usage}}, nil
}
