package stats

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
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
