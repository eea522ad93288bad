package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sysunix "golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// fakeFsRuntime answers ImageFsInfo and ListContainerStats with usage on
// the filesystem of dir.
type fakeFsRuntime struct{ dir string }

func (f fakeFsRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.dir}, UsedBytes: &runtimeapi.UInt64Value{Value: 5 << 20}, InodesUsed: &runtimeapi.UInt64Value{Value: 50},
	}}}, nil
}

func (f fakeFsRuntime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return []*runtimeapi.ContainerStats{{
		Attributes:    &runtimeapi.ContainerAttributes{Id: "cid"},
		WritableLayer: &runtimeapi.FilesystemUsage{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.dir}, UsedBytes: &runtimeapi.UInt64Value{Value: 8192}, InodesUsed: &runtimeapi.UInt64Value{Value: 3}},
	}}, nil
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The Summary's filesystem figures: the node's root filesystem, the
// runtime's image (and container) filesystem, each container's writable
// layer and logs, the pod's volumes, and its ephemeral storage (writable
// layers, logs and the node's own volume kinds, not a hostPath-like one).
func TestSummaryFs(t *testing.T) {
	p, _, _ := testProvider(t)
	root, logs := t.TempDir(), t.TempDir()
	p.cfg.Fs = FsConfig{RootDir: root, PodLogsDir: logs, Images: fakeFsRuntime{dir: root}, Runtime: fakeFsRuntime{dir: root}}
	writeFile(t, filepath.Join(root, "pods/u/volumes/kubernetes.io~empty-dir/data/a"), 64<<10)
	writeFile(t, filepath.Join(root, "pods/u/volumes/kubernetes.io~empty-dir/data/sub/b"), 64<<10)
	writeFile(t, filepath.Join(root, "pods/u/volumes/kubernetes.io~configmap/cfg/key"), 10)
	writeFile(t, filepath.Join(root, "pods/u/volumes/example.com~nfs/share/big"), 1<<20)
	writeFile(t, filepath.Join(logs, "ns_p_u/c/0.log"), 32<<10)

	s := p.Summary(context.Background(), false)
	if s.Node.Fs == nil || *s.Node.Fs.CapacityBytes == 0 || *s.Node.Fs.UsedBytes+*s.Node.Fs.AvailableBytes > *s.Node.Fs.CapacityBytes || s.Node.Fs.InodesFree == nil {
		t.Fatalf("node fs = %+v", s.Node.Fs)
	}
	if s.Node.Runtime == nil || s.Node.Runtime.ImageFs == nil || *s.Node.Runtime.ImageFs.UsedBytes != 5<<20 || *s.Node.Runtime.ImageFs.CapacityBytes != *s.Node.Fs.CapacityBytes || s.Node.Runtime.ContainerFs != s.Node.Runtime.ImageFs {
		t.Fatalf("runtime = %+v", s.Node.Runtime)
	}
	pod := s.Pods[0]
	c := pod.Containers[0]
	if c.Name != "c" || c.Rootfs == nil || *c.Rootfs.UsedBytes != 8192 || *c.Rootfs.InodesUsed != 3 || c.Rootfs.CapacityBytes == nil {
		t.Errorf("rootfs of c = %+v", c.Rootfs)
	}
	// A file's blocks, at least its size; the directory and the file.
	if c.Logs == nil || *c.Logs.UsedBytes < 32<<10 || *c.Logs.InodesUsed != 2 {
		t.Errorf("logs of c = %+v", c.Logs)
	}
	vols := map[string]statsapi.VolumeStats{}
	for _, v := range pod.VolumeStats {
		vols[v.Name] = v
	}
	if len(vols) != 3 || *vols["data"].UsedBytes < 128<<10 || *vols["data"].InodesUsed != 4 || *vols["cfg"].InodesUsed != 2 || *vols["share"].UsedBytes < 1<<20 {
		t.Errorf("volumes = %+v", pod.VolumeStats)
	}
	want := 8192 + *c.Logs.UsedBytes + *vols["data"].UsedBytes + *vols["cfg"].UsedBytes
	if e := pod.EphemeralStorage; e == nil || *e.UsedBytes != want || *e.InodesUsed != 3+2+4+2 || *e.CapacityBytes != *s.Node.Fs.CapacityBytes {
		t.Errorf("ephemeral storage = %+v, want %d bytes used", e, want)
	}
	// metrics-server's view has none of it.
	if s := p.Summary(context.Background(), true); s.Node.Fs != nil || s.Pods[0].EphemeralStorage != nil {
		t.Errorf("only_cpu_and_memory has fs figures")
	}
}

// countingFsRuntime counts ListContainerStats calls.
type countingFsRuntime struct {
	fakeFsRuntime
	calls *atomic.Int32
}

func (f countingFsRuntime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	f.calls.Add(1)
	return f.fakeFsRuntime.ListContainerStats(ctx, filter)
}

// /metrics/cadvisor's filesystem series: a container's writable layer
// (usage from the runtime; limit and inodes of the filesystem it is on)
// and the node's root filesystem on the root cgroup, each with its
// device; the runtime is asked at most once per FsMaxAge, in the
// background (Run) for figures up to six FsMaxAge old.
func TestCadvisorFs(t *testing.T) {
	p, _, clk := testProvider(t)
	root := t.TempDir()
	var calls atomic.Int32
	p.cfg.Fs = FsConfig{RootDir: root, Runtime: countingFsRuntime{fakeFsRuntime{dir: root}, &calls}}
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	var dev syscall.Stat_t
	if err := syscall.Stat(root, &dev); err != nil {
		t.Fatal(err)
	}
	device := fmt.Sprintf("%d:%d", sysunix.Major(dev.Dev), sysunix.Minor(dev.Dev))
	if device == "254:0" {
		device = "/dev/vda" // fakeCgroups' name for it
	}
	ctr := map[string]string{"container": "c", "device": device, "id": "/kubepods/podu/cid", "image": "busybox", "name": "cid", "namespace": "ns", "pod": "p"}
	node := map[string]string{"container": "", "device": device, "id": "/", "image": "", "name": "", "namespace": "", "pod": ""}
	capacity := strconv.FormatFloat(float64(st.Blocks*uint64(st.Bsize)), 'g', -1, 64)
	body := scrape(t, p)
	for _, want := range []string{
		series("container_fs_usage_bytes", "8192", ctr),
		series("container_fs_limit_bytes", capacity, ctr),
		series("container_fs_inodes_total", strconv.FormatFloat(float64(st.Files), 'g', -1, 64), ctr),
		series("container_fs_limit_bytes", capacity, node),
		`container_fs_usage_bytes{container="",device="` + device + `",id="/"`,
		`container_fs_inodes_free{container="",device="` + device + `",id="/"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	// Neither the pod's own cgroup nor the gone container has a
	// filesystem series.
	for _, unwanted := range []string{`container_fs_usage_bytes{container="",device="` + device + `",id="/kubepods/podu"`, `name="gid"`} {
		if strings.Contains(body, unwanted) {
			t.Errorf("unexpected %s", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("body:\n%s", body)
	}
	scrape(t, p)
	if n := calls.Load(); n != 1 {
		t.Errorf("two scrapes within FsMaxAge asked the runtime %d times, want once", n)
	}
	// FsMaxAge later, a scrape is served the figures it has and asks Run
	// to read them afresh.
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { p.Run(ctx); close(ran) }()
	clk.SetTime(clk.Now().Add(10 * time.Second))
	scrape(t, p)
	polltest.Until(t, 10*time.Second, "Run to ask the runtime again", func() (bool, string) {
		n := calls.Load()
		return n == 2, fmt.Sprintf("%d calls", n)
	})
	cancel()
	<-ran
	// With figures older than six FsMaxAge, the scrape reads them itself.
	clk.SetTime(clk.Now().Add(60 * time.Second))
	scrape(t, p)
	if n := calls.Load(); n != 3 {
		t.Errorf("a scrape a minute later asked the runtime %d times in all, want 3", n)
	}
}

// A pod's logs and volumes are measured at most once per FsMaxAge, all
// at once, and again when it has a container not measured yet; the
// measures of pods gone are dropped.
func TestSummaryPodDirsCached(t *testing.T) {
	p, _, clk := testProvider(t)
	root, logs := t.TempDir(), t.TempDir()
	p.cfg.Fs = FsConfig{RootDir: root, PodLogsDir: logs}
	writeFile(t, filepath.Join(root, "pods/u/volumes/kubernetes.io~empty-dir/data/a"), 64<<10)
	writeFile(t, filepath.Join(logs, "ns_p_u/c/0.log"), 4<<10)
	ctx := context.Background()
	used := func(s *statsapi.Summary) (vol, log uint64) {
		pod := s.Pods[0]
		return *pod.VolumeStats[0].UsedBytes, *pod.Containers[0].Logs.UsedBytes
	}
	vol0, log0 := used(p.Summary(ctx, false))
	writeFile(t, filepath.Join(root, "pods/u/volumes/kubernetes.io~empty-dir/data/b"), 256<<10)
	writeFile(t, filepath.Join(logs, "ns_p_u/c/1.log"), 256<<10)
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if vol, log := used(p.Summary(ctx, false)); vol != vol0 || log != log0 {
		t.Errorf("within FsMaxAge: volume %d, logs %d bytes; want the first measures %d, %d", vol, log, vol0, log0)
	}
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if vol, log := used(p.Summary(ctx, false)); vol < vol0+256<<10 || log < log0+256<<10 {
		t.Errorf("FsMaxAge later: volume %d, logs %d bytes; want both 256 KiB more than %d, %d", vol, log, vol0, log0)
	}
	p.cfg.Pods = fakePods{}
	clk.SetTime(clk.Now().Add(time.Second))
	p.Summary(ctx, false)
	if len(p.dirs) != 0 {
		t.Errorf("measures of %d pods kept after they went", len(p.dirs))
	}
}

// An emptyDir in memory (its own tmpfs mount) is not on the node's
// filesystem: it counts in the pod's volumes, not in its ephemeral
// storage.
func TestSummaryFsMemoryVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	p, _, _ := testProvider(t)
	root := t.TempDir()
	p.cfg.Fs = FsConfig{RootDir: root}
	mem := filepath.Join(root, "pods/u/volumes/kubernetes.io~empty-dir/mem")
	if err := os.MkdirAll(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mem, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	defer func() {
		if err := syscall.Unmount(mem, 0); err != nil {
			t.Errorf("unmount %s: %v", mem, err)
		}
	}()
	writeFile(t, filepath.Join(mem, "a"), 1<<20)
	writeFile(t, filepath.Join(root, "pods/u/volumes/kubernetes.io~empty-dir/disk/b"), 64<<10)
	pod := p.Summary(context.Background(), false).Pods[0]
	vols := map[string]statsapi.VolumeStats{}
	for _, v := range pod.VolumeStats {
		vols[v.Name] = v
	}
	if len(vols) != 2 || *vols["mem"].UsedBytes < 1<<20 {
		t.Fatalf("volumes = %+v, want mem (1Mi) and disk", pod.VolumeStats)
	}
	if used := *pod.EphemeralStorage.UsedBytes; used != *vols["disk"].UsedBytes {
		t.Errorf("ephemeral storage %d bytes, want only the emptyDir on disk's %d", used, *vols["disk"].UsedBytes)
	}
}
