package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	sysunix "golang.org/x/sys/unix"
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
	// rootfs holds the containers' writable layers by container ID, and
	// rootfsDevice the device of the filesystem each is on ("/dev/vda",
	// or "major:minor" when it has no name).
	rootfs       map[string]*statsapi.FsStats
	rootfsDevice map[string]string
	// nodeDevice is the device of the node's filesystem.
	nodeDevice string
}

// readFs reads the node's filesystems and the containers' writable
// layers. What cannot be read is left out and logged.
func (p *Provider) readFs(ctx context.Context, at metav1.Time) *fsSnapshot {
	cfg := p.cfg.Fs
	out := &fsSnapshot{rootfs: map[string]*statsapi.FsStats{}, rootfsDevice: map[string]string{}}
	logger := klog.FromContext(ctx)
	if cfg.RootDir != "" {
		out.node = statfs(cfg.RootDir, at)
		out.nodeDevice = p.fsDevice(cfg.RootDir)
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
	mounts, devices := map[string]*statsapi.FsStats{}, map[string]string{}
	for _, c := range ctrs {
		wl := c.GetWritableLayer()
		if wl == nil {
			continue
		}
		mp := wl.GetFsId().GetMountpoint()
		if _, ok := mounts[mp]; !ok && mp != "" {
			mounts[mp], devices[mp] = statfs(mp, at), p.fsDevice(mp)
		}
		out.rootfsDevice[c.GetAttributes().GetId()] = devices[mp]
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

// fsDevice names the block device of the filesystem path is on, as
// cAdvisor's device label does; "" when path cannot be read.
func (p *Provider) fsDevice(path string) string {
	var st syscall.Stat_t
	if path == "" || syscall.Stat(path, &st) != nil {
		return ""
	}
	return p.deviceName(uint64(sysunix.Major(st.Dev)), uint64(sysunix.Minor(st.Dev)))
}

// fsStaleFactor bounds how old the filesystem figures served while a
// fresh read is under way may be: fsStaleFactor * FsMaxAge.
const fsStaleFactor = 6

// cachedFs returns the filesystem figures of the runtime and the node.
// Figures younger than FsMaxAge are served as they are. Older ones, up to
// fsStaleFactor * FsMaxAge (one minute by default), are served too, and
// Run is asked to read them afresh, so that a request does not wait for
// the runtime (ListContainerStats at 100 containers takes containerd 0.1
// to 0.5 s: it asks every container's shim for its cgroup figures too).
// With none, or only older ones, the request reads them and waits.
func (p *Provider) cachedFs(ctx context.Context) *fsSnapshot {
	now := p.cfg.Clock.Now()
	p.fsMu.Lock()
	f, age := p.fsLast, now.Sub(p.fsAt)
	p.fsMu.Unlock()
	switch {
	case f != nil && age < p.cfg.FsMaxAge:
		return f
	case f != nil && age < fsStaleFactor*p.cfg.FsMaxAge:
		select {
		case p.fsWanted <- struct{}{}:
		default: // one is pending
		}
		return f
	}
	return p.refreshFs(ctx)
}

// refreshFs reads the filesystem figures unless a read that ended while
// it waited for fsReadMu made them fresh, and returns the newest.
func (p *Provider) refreshFs(ctx context.Context) *fsSnapshot {
	p.fsReadMu.Lock()
	defer p.fsReadMu.Unlock()
	p.fsMu.Lock()
	f, at := p.fsLast, p.fsAt
	p.fsMu.Unlock()
	now := p.cfg.Clock.Now()
	if f != nil && now.Sub(at) < p.cfg.FsMaxAge {
		return f
	}
	f = p.readFs(ctx, metav1.NewTime(now))
	p.fsMu.Lock()
	p.fsLast, p.fsAt = f, now
	p.fsMu.Unlock()
	return f
}

// keepIdle: once the Provider has read no snapshot for keepIdle
// FsMaxAges (a minute by default), Run closes every file it keeps open
// (Config.Files' and the sandboxes' net/dev), which the next read opens
// again; so a pod gone meanwhile holds nothing (a net/dev file holds its
// network namespace) for longer than that when nothing reads.
const keepIdle = 6

// Run reads the filesystem figures afresh whenever cachedFs asks, and
// closes the files kept open when the Provider is idle (keepIdle), until
// ctx is done; then it closes every file kept open.
// Without it, figures older than FsMaxAge are served until they are
// fsStaleFactor * FsMaxAge old, and then read by the request.
func (p *Provider) Run(ctx context.Context) {
	idle := p.cfg.Clock.NewTicker(keepIdle * p.cfg.FsMaxAge)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.closeKept()
			p.mu.Unlock()
			return
		case <-p.fsWanted:
			p.refreshFs(ctx)
		case <-idle.C():
			p.mu.Lock()
			if p.last == nil || p.cfg.Clock.Since(p.last.at) >= keepIdle*p.cfg.FsMaxAge {
				p.closeKept()
			}
			p.mu.Unlock()
		}
	}
}

// closeKept closes every file kept open between snapshots. p.mu must be
// held.
func (p *Provider) closeKept() {
	if p.cfg.Files != nil {
		p.cfg.Files.Close()
	}
	for path := range p.sandboxes {
		p.forgetSandbox(path)
	}
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
// are not on the node's filesystem (only emptyDir and configMap volumes
// count, and not an emptyDir in memory).
func (p *Provider) podFs(ctx context.Context, f *fsSnapshot, pod *statsapi.PodStats, ps podSample, at metav1.Time) {
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
	dirs := p.podDirs(ctx, pod, string(ps.pod.UID))
	for i := range pod.Containers { // in the order of ps.containers
		c := &pod.Containers[i]
		c.Rootfs = f.rootfs[ps.containers[i].c.ID]
		add(c.Rootfs)
		if p.cfg.Fs.PodLogsDir != "" {
			c.Logs = dirs.logs[c.Name]
			add(c.Logs)
		}
	}
	for i, v := range dirs.volumes {
		pod.VolumeStats = append(pod.VolumeStats, v)
		if dirs.ephemeral[i] {
			add(&dirs.volumes[i].FsStats)
		}
	}
	pod.EphemeralStorage = eph
}

// podDirsEntry is what a pod's directories held when measured: each
// container's logs by name, and the pod's volumes, ephemeral[i] telling
// whether volumes[i] counts in its ephemeral storage. Immutable once made.
type podDirsEntry struct {
	at        time.Time
	logs      map[string]*statsapi.FsStats
	volumes   []statsapi.VolumeStats
	ephemeral []bool
	// used is the podDirsGen of the last Summary that used it.
	used uint64
}

// podDirs returns the measures of the pod's log and volume directories,
// made at most FsMaxAge ago, all at once (so that a Summary never pairs a
// container's logs with its volumes measured at another time), and again
// when the pod has a container measured without. The kubelet measures
// volumes at most once a minute (its volume stats period); a walk of
// every pod's directories at every read cost about as much as reading
// their cgroups.
func (p *Provider) podDirs(ctx context.Context, pod *statsapi.PodStats, uid string) *podDirsEntry {
	now := p.cfg.Clock.Now()
	p.dirsMu.Lock()
	e, ok := p.dirs[uid]
	p.dirsMu.Unlock()
	fresh := ok && now.Sub(e.at) < p.cfg.FsMaxAge && !now.Before(e.at)
	for i := 0; fresh && p.cfg.Fs.PodLogsDir != "" && i < len(pod.Containers); i++ {
		_, fresh = e.logs[pod.Containers[i].Name]
	}
	if !fresh {
		e = p.measurePodDirs(ctx, pod, uid, now)
	}
	p.dirsMu.Lock()
	e.used = p.dirsGen
	p.dirs[uid] = e
	p.dirsMu.Unlock()
	return e
}

// measurePodDirs measures each container's logs and every volume under
// the pod's volume directory.
func (p *Provider) measurePodDirs(ctx context.Context, pod *statsapi.PodStats, uid string, now time.Time) *podDirsEntry {
	logger := klog.FromContext(ctx)
	at := metav1.NewTime(now)
	e := &podDirsEntry{at: now, logs: map[string]*statsapi.FsStats{}}
	if p.cfg.Fs.PodLogsDir != "" {
		logDir := filepath.Join(p.cfg.Fs.PodLogsDir, fmt.Sprintf("%s_%s_%s", pod.PodRef.Namespace, pod.PodRef.Name, uid))
		for i := range pod.Containers {
			name := pod.Containers[i].Name
			logs, err := du(filepath.Join(logDir, name), at)
			if err != nil {
				logger.V(4).Info("Measuring a container's logs failed", "pod", pod.PodRef.Namespace+"/"+pod.PodRef.Name, "container", name, "err", err)
			}
			e.logs[name] = logs
		}
	}
	if p.cfg.Fs.RootDir == "" {
		return e
	}
	volumesDir := filepath.Join(p.cfg.Fs.RootDir, "pods", uid, "volumes")
	nodeDev, nodeDevOK := device(p.cfg.Fs.RootDir)
	plugins, _ := os.ReadDir(volumesDir)
	for _, plugin := range plugins {
		vols, _ := os.ReadDir(filepath.Join(volumesDir, plugin.Name()))
		for _, v := range vols {
			path := filepath.Join(volumesDir, plugin.Name(), v.Name())
			st, err := du(path, at)
			if err != nil || st == nil {
				logger.V(4).Info("Measuring a volume failed", "pod", pod.PodRef.Namespace+"/"+pod.PodRef.Name, "volume", v.Name(), "err", err)
				continue
			}
			e.volumes = append(e.volumes, statsapi.VolumeStats{Name: v.Name(), FsStats: *st})
			// A volume mounted from elsewhere (an emptyDir in memory, a
			// secret's tmpfs) is not on the node's filesystem.
			dev, ok := device(path)
			e.ephemeral = append(e.ephemeral, ephemeralPlugins[plugin.Name()] && (!nodeDevOK || !ok || dev == nodeDev))
		}
	}
	return e
}

// ephemeralPlugins are the volume plugin directories whose volumes count
// in a pod's ephemeral storage when on the node's filesystem, as the
// kubelet's IsLocalEphemeralVolume: emptyDir and configMap (secrets,
// downwardAPI and projected volumes live on a tmpfs).
var ephemeralPlugins = map[string]bool{
	"kubernetes.io~empty-dir": true,
	"kubernetes.io~configmap": true,
}

// device is the device of the filesystem path is on.
func device(path string) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, false
	}
	return st.Dev, true
}

// addFs adds the filesystem figures to s, the summary of snap: those of
// cachedFs, and the pods' logs and volumes of podDirs.
func (p *Provider) addFs(ctx context.Context, s *statsapi.Summary, snap *snapshot) {
	at := metav1.NewTime(snap.at)
	f := p.cachedFs(ctx)
	p.dirsMu.Lock()
	p.dirsGen++
	gen := p.dirsGen
	p.dirsMu.Unlock()
	defer func() {
		p.dirsMu.Lock()
		defer p.dirsMu.Unlock()
		if p.dirsGen != gen {
			return // a later Summary prunes
		}
		for uid, e := range p.dirs {
			if e.used != gen {
				delete(p.dirs, uid)
			}
		}
	}()
	s.Node.Fs = f.node
	if f.imageFs != nil || f.containerFs != nil {
		s.Node.Runtime = &statsapi.RuntimeStats{ImageFs: f.imageFs, ContainerFs: f.containerFs}
	}
	for i := range s.Pods {
		p.podFs(ctx, f, &s.Pods[i], snap.podList[i], at)
	}
}
