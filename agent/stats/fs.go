package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// imageFsReader tells the runtime's image filesystem (CRI ImageService).
type imageFsReader interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// containerStatsLister lists the containers' stats, with their writable
// layers (CRI RuntimeService).
type containerStatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// FsConfig says where the node's filesystems are, for the Summary's fs
// figures. The zero value reports none.
type FsConfig struct {
	// RootDir is the agent's root directory: its filesystem is the node's
	// (Node.Fs), and pods' volumes are under <RootDir>/pods/<uid>/volumes.
	RootDir string
	// PodLogsDir holds the pods' log directories,
	// <namespace>_<name>_<uid>/<container>.
	PodLogsDir string
	// Images, if set, is asked for the image filesystem, and Runtime for
	// the containers' writable layers.
	Images  imageFsReader
	Runtime containerStatsLister
}

// fsSnapshot is the filesystem figures read at one instant.
type fsSnapshot struct {
	node, imageFs, containerFs *statsapi.FsStats
	// rootfs holds the containers' writable layers by container ID.
	rootfs map[string]*statsapi.FsStats
}

// readFs reads the node's filesystems and the containers' writable
// layers. What cannot be read is left out and logged.
func (p *Provider) readFs(ctx context.Context, at metav1.Time) *fsSnapshot {
	cfg := p.cfg.Fs
	out := &fsSnapshot{rootfs: map[string]*statsapi.FsStats{}}
	logger := klog.FromContext(ctx)
	if cfg.RootDir != "" {
		out.node = statfs(cfg.RootDir, at)
	}
	if cfg.Images != nil {
		p.readImageFs(ctx, out, at)
	}
	if cfg.Runtime == nil {
		return out
	}
	ctrs, err := cfg.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		logger.V(2).Info("Listing the containers' stats failed", "err", err)
		return out
	}
	mounts := map[string]*statsapi.FsStats{}
	for _, c := range ctrs {
		wl := c.GetWritableLayer()
		if wl == nil {
			continue
		}
		mp := wl.GetFsId().GetMountpoint()
		if _, ok := mounts[mp]; !ok && mp != "" {
			mounts[mp] = statfs(mp, at)
		}
		fsStats := &statsapi.FsStats{Time: at, UsedBytes: ptr(wl.GetUsedBytes().GetValue()), InodesUsed: ptr(wl.GetInodesUsed().GetValue())}
		if whole := mounts[mp]; whole != nil {
			fsStats.CapacityBytes, fsStats.AvailableBytes, fsStats.Inodes, fsStats.InodesFree = whole.CapacityBytes, whole.AvailableBytes, whole.Inodes, whole.InodesFree
		}
		out.rootfs[c.GetAttributes().GetId()] = fsStats
	}
	return out
}

// readImageFs reads the runtime's image and container filesystems into
// out; the container filesystem is the image one unless the runtime
// splits them.
func (p *Provider) readImageFs(ctx context.Context, out *fsSnapshot, at metav1.Time) {
	info, err := p.cfg.Fs.Images.ImageFsInfo(ctx)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Reading the runtime's image filesystem failed", "err", err)
		return
	}
	out.imageFs = runtimeFs(info.GetImageFilesystems(), at)
	out.containerFs = runtimeFs(info.GetContainerFilesystems(), at)
	if out.containerFs == nil {
		out.containerFs = out.imageFs
	}
}

// runtimeFs is the first of the runtime's filesystems: what the runtime
// uses of it, and the size of the filesystem it is on.
func runtimeFs(usages []*runtimeapi.FilesystemUsage, at metav1.Time) *statsapi.FsStats {
	if len(usages) == 0 {
		return nil
	}
	u := usages[0]
	out := &statsapi.FsStats{Time: at, UsedBytes: ptr(u.GetUsedBytes().GetValue()), InodesUsed: ptr(u.GetInodesUsed().GetValue())}
	if whole := statfs(u.GetFsId().GetMountpoint(), at); whole != nil {
		out.CapacityBytes, out.AvailableBytes, out.Inodes, out.InodesFree = whole.CapacityBytes, whole.AvailableBytes, whole.Inodes, whole.InodesFree
	}
	return out
}

// statfs returns the figures of the filesystem path is on; nil when it
// cannot be read.
func statfs(path string, at metav1.Time) *statsapi.FsStats {
	var st syscall.Statfs_t
	if path == "" || syscall.Statfs(path, &st) != nil {
		return nil
	}
	bsize := uint64(st.Bsize)
	capacity, free, avail := st.Blocks*bsize, st.Bfree*bsize, st.Bavail*bsize
	return &statsapi.FsStats{
		Time:           at,
		CapacityBytes:  ptr(capacity),
		AvailableBytes: ptr(avail),
		UsedBytes:      ptr(capacity - free),
		Inodes:         ptr(st.Files),
		InodesFree:     ptr(st.Ffree),
		InodesUsed:     ptr(st.Files - st.Ffree),
	}
}

// du is the space and inodes that the tree at path takes on its
// filesystem, as the kubelet's du-based volume metrics count them, with
// the size of that filesystem; nil when path does not exist.
func du(path string, at metav1.Time) (*statsapi.FsStats, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil //nolint:nilnil // nothing to measure
	}
	whole := statfs(path, at)
	if whole == nil {
		return nil, fmt.Errorf("statfs %s: cannot read", path)
	}
	var used, inodes uint64
	err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // removed meanwhile
		}
		inodes++
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			used += uint64(st.Blocks) * 512
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("measure %s: %w", path, err)
	}
	whole.UsedBytes, whole.InodesUsed = ptr(used), ptr(inodes)
	return whole, nil
}

// podFs fills pod's logs, rootfs, volume and ephemeral-storage figures:
// each container's writable layer (from the runtime) and log directory,
// every volume under the pod's volume directory, and, as the kubelet
// counts a pod's ephemeral storage, their sum without the volumes that
// are not the node's (only emptyDir, configMap, secret, downwardAPI and
// projected volumes count).
func (p *Provider) podFs(ctx context.Context, f *fsSnapshot, pod *statsapi.PodStats, ps podSample, at metav1.Time) {
	uid := string(ps.pod.UID)
	logger := klog.FromContext(ctx)
	eph := &statsapi.FsStats{Time: at, UsedBytes: ptr(uint64(0)), InodesUsed: ptr(uint64(0))}
	if f.node != nil {
		eph.CapacityBytes, eph.AvailableBytes, eph.Inodes, eph.InodesFree = f.node.CapacityBytes, f.node.AvailableBytes, f.node.Inodes, f.node.InodesFree
	}
	add := func(s *statsapi.FsStats) {
		if s != nil && s.UsedBytes != nil {
			*eph.UsedBytes += *s.UsedBytes
		}
		if s != nil && s.InodesUsed != nil {
			*eph.InodesUsed += *s.InodesUsed
		}
	}
	logDir := filepath.Join(p.cfg.Fs.PodLogsDir, fmt.Sprintf("%s_%s_%s", pod.PodRef.Namespace, pod.PodRef.Name, uid))
	for i := range pod.Containers { // in the order of ps.containers
		c := &pod.Containers[i]
		c.Rootfs = f.rootfs[ps.containers[i].c.ID]
		add(c.Rootfs)
		if p.cfg.Fs.PodLogsDir != "" {
			logs, err := du(filepath.Join(logDir, c.Name), at)
			if err != nil {
				logger.V(4).Info("Measuring a container's logs failed", "pod", pod.PodRef.Namespace+"/"+pod.PodRef.Name, "container", c.Name, "err", err)
			}
			c.Logs = logs
			add(logs)
		}
	}
	if p.cfg.Fs.RootDir == "" {
		pod.EphemeralStorage = eph
		return
	}
	volumesDir := filepath.Join(p.cfg.Fs.RootDir, "pods", uid, "volumes")
	plugins, _ := os.ReadDir(volumesDir)
	for _, plugin := range plugins {
		vols, _ := os.ReadDir(filepath.Join(volumesDir, plugin.Name()))
		for _, v := range vols {
			st, err := du(filepath.Join(volumesDir, plugin.Name(), v.Name()), at)
			if err != nil || st == nil {
				logger.V(4).Info("Measuring a volume failed", "pod", pod.PodRef.Namespace+"/"+pod.PodRef.Name, "volume", v.Name(), "err", err)
				continue
			}
			pod.VolumeStats = append(pod.VolumeStats, statsapi.VolumeStats{Name: v.Name(), FsStats: *st})
			if ephemeralPlugins[plugin.Name()] {
				add(st)
			}
		}
	}
	pod.EphemeralStorage = eph
}

// ephemeralPlugins are the volume plugin directories whose volumes count
// in a pod's ephemeral storage.
var ephemeralPlugins = map[string]bool{
	"kubernetes.io~empty-dir":    true,
	"kubernetes.io~configmap":    true,
	"kubernetes.io~secret":       true,
	"kubernetes.io~downward-api": true,
	"kubernetes.io~projected":    true,
}

// addFs adds the filesystem figures to s, the summary of snap.
func (p *Provider) addFs(ctx context.Context, s *statsapi.Summary, snap *snapshot) {
	at := metav1.NewTime(snap.at)
	f := p.readFs(ctx, at)
	s.Node.Fs = f.node
	if f.imageFs != nil || f.containerFs != nil {
		s.Node.Runtime = &statsapi.RuntimeStats{ImageFs: f.imageFs, ContainerFs: f.containerFs}
	}
	for i := range s.Pods {
		p.podFs(ctx, f, &s.Pods[i], snap.podList[i], at)
	}
}
