package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writeFiles creates files (and their directories) below dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// fakeV1 is a cgroup v1 mount root made of plain directories, with the
// files the library copies from parents, and a sysfs with one disk and one
// empty zram device.
func fakeV1(t *testing.T) (mountRoot, sysRoot string) {
	t.Helper()
	mountRoot, sysRoot = t.TempDir(), t.TempDir()
	for _, c := range []string{"cpu", "cpuacct", "memory", "pids", "blkio", "devices", "freezer", "systemd", "unified"} {
		if err := os.MkdirAll(filepath.Join(mountRoot, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, mountRoot, map[string]string{"cpuset/cpuset.cpus": "0-1\n", "cpuset/cpuset.mems": "0\n"})
	writeFiles(t, sysRoot, map[string]string{
		"block/vda/dev": "254:0\n", "block/vda/size": "536870912\n",
		"block/zram0/dev": "253:0\n", "block/zram0/size": "0\n",
	})
	return mountRoot, sysRoot
}

func guaranteedPod(uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "g", UID: uid}, Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", nil, res("500m", "64Mi"))}}}
}

func burstablePod(uid types.UID, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: uid}, Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", res(cpu, ""), nil)}}}
}

func TestManagerV1Files(t *testing.T) {
	mountRoot, sysRoot := fakeV1(t)
	ctx := context.Background()
	m, err := New(ctx, Config{Root: "/bed", Driver: DriverCgroupfs, PerQOS: true, BlkioAccounting: true, MountRoot: mountRoot, SysRoot: sysRoot, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cpu", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "systemd"} {
		for _, q := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
			if _, err := os.Stat(filepath.Join(mountRoot, c, "bed", q)); err != nil {
				t.Errorf("QoS cgroup missing: %v", err)
			}
		}
	}
	if got := readTrim(t, filepath.Join(mountRoot, "cpu/bed/kubepods/besteffort/cpu.shares")); got != "2" {
		t.Errorf("besteffort cpu.shares = %s, want 2", got)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "cpuset/bed/kubepods/cpuset.cpus")); got != "0-1" {
		t.Errorf("kubepods cpuset.cpus = %q, want the root's 0-1", got)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "blkio/bed/kubepods/blkio.throttle.read_bps_device")); got != "254:0 0" {
		t.Errorf("blkio accounting rule = %q, want the no-op rule for vda only", got)
	}

	g := guaranteedPod("g-uid")
	if err := m.EnsurePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, want := m.PodCgroupParent(g), "/bed/kubepods/podg-uid"; got != want {
		t.Errorf("PodCgroupParent = %s, want %s", got, want)
	}
	for file, want := range map[string]string{
		"cpu/bed/kubepods/podg-uid/cpu.shares":                "512",
		"cpu/bed/kubepods/podg-uid/cpu.cfs_quota_us":          "50000",
		"cpu/bed/kubepods/podg-uid/cpu.cfs_period_us":         "100000",
		"memory/bed/kubepods/podg-uid/memory.limit_in_bytes":  "67108864",
		"cpuset/bed/kubepods/podg-uid/cpuset.mems":            "0",
		"freezer/bed/kubepods/podg-uid":                       "",
		"systemd/bed/kubepods/podg-uid":                       "",
		"blkio/bed/kubepods/podg-uid":                         "",
		"pids/bed/kubepods/podg-uid":                          "",
		"devices/bed/kubepods/podg-uid":                       "",
		"cpuacct/bed/kubepods/podg-uid":                       "",
		"memory/bed/kubepods/burstable/memory.limit_in_bytes": "-1",
	} {
		p := filepath.Join(mountRoot, file)
		switch want {
		case "":
			if _, err := os.Stat(p); err != nil {
				t.Errorf("missing %s", file)
			}
		default:
			if got := readTrim(t, p); got != want {
				t.Errorf("%s = %s, want %s", file, got, want)
			}
		}
	}

	// Burstable pods' requests add up in the burstable cgroup's shares.
	for _, p := range []*v1.Pod{burstablePod("b1", "100m"), burstablePod("b2", "400m")} {
		if err := m.EnsurePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := readTrim(t, filepath.Join(mountRoot, "cpu/bed/kubepods/burstable/cpu.shares")); got != "512" {
		t.Errorf("burstable cpu.shares = %s, want 512 (500m requested)", got)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "cpu/bed/kubepods/burstable/podb1/cpu.cfs_quota_us")); got != "-1" {
		t.Errorf("burstable pod without cpu limit: quota = %s, want -1", got)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "memory/bed/kubepods/burstable/podb1/memory.limit_in_bytes")); got != "-1" {
		t.Errorf("burstable pod without memory limit: limit = %s, want -1", got)
	}

	// An edit of the pod's limits reaches its cgroup.
	g2 := g.DeepCopy()
	g2.Spec.Containers[0].Resources.Limits = res("1", "128Mi")
	if err := m.EnsurePod(ctx, g2); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "memory/bed/kubepods/podg-uid/memory.limit_in_bytes")); got != "134217728" {
		t.Errorf("memory limit after an edit = %s, want 134217728", got)
	}

	if p, ok := m.FindPodCgroup("b2"); !ok || p != "/bed/kubepods/burstable/podb2" {
		t.Errorf("FindPodCgroup(b2) = %q, %v", p, ok)
	}
	if _, ok := m.FindPodCgroup("nope"); ok {
		t.Errorf("FindPodCgroup found a pod that has no cgroup")
	}
	// FindPodCgroupOf looks in the pod's class first, and in the others
	// when its class changed (b2 is now BestEffort; its cgroup stays).
	if p, ok := m.FindPodCgroupOf(g2); !ok || p != "/bed/kubepods/podg-uid" {
		t.Errorf("FindPodCgroupOf(g) = %q, %v", p, ok)
	}
	b2 := burstablePod("b2", "400m")
	b2.Spec.Containers[0].Resources = v1.ResourceRequirements{}
	if p, ok := m.FindPodCgroupOf(b2); !ok || p != "/bed/kubepods/burstable/podb2" {
		t.Errorf("FindPodCgroupOf(b2 now BestEffort) = %q, %v", p, ok)
	}
	if got := m.listPods(); len(got) != 3 || got[0] != "b1" || got[1] != "b2" || got[2] != "g-uid" {
		t.Errorf("listPods = %v, want [b1 b2 g-uid]", got)
	}
	if got, want := m.ContainerCgroup(m.PodCgroupParent(g), "abc"), "/bed/kubepods/podg-uid/abc"; got != want {
		t.Errorf("ContainerCgroup = %s, want %s", got, want)
	}
}

// TestBurstableSharesWrittenOnlyWhenChanged: a sync that changes no
// Burstable request leaves the shared burstable cgroup alone (a marker
// written into it stays); one that does rewrites it.
func TestBurstableSharesWrittenOnlyWhenChanged(t *testing.T) {
	mountRoot, sysRoot := fakeV1(t)
	ctx := context.Background()
	m, err := New(ctx, Config{Root: "/bed", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: sysRoot, Version: 1, PerQOS: true})
	if err != nil {
		t.Fatal(err)
	}
	shares := filepath.Join(mountRoot, "cpu/bed/kubepods/burstable/cpu.shares")
	if err := m.EnsurePod(ctx, burstablePod("b1", "500m")); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, shares); got != "512" {
		t.Fatalf("burstable cpu.shares = %s, want 512 (500m requested)", got)
	}
	if err := os.WriteFile(shares, []byte("marker"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{burstablePod("b1", "500m"), guaranteedPod("g")} {
		if err := m.EnsurePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := readTrim(t, shares); got != "marker" {
		t.Errorf("burstable cpu.shares rewritten to %s by syncs that changed no Burstable request", got)
	}
	if err := m.EnsurePod(ctx, burstablePod("b2", "500m")); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, shares); got != "1024" {
		t.Errorf("burstable cpu.shares = %s after a second Burstable pod, want 1024 (1000m requested)", got)
	}
}

func TestManagerWithoutPerQOS(t *testing.T) {
	mountRoot, sysRoot := fakeV1(t)
	ctx := context.Background()
	m, err := New(ctx, Config{Root: "/bed", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: sysRoot, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := guaranteedPod("g")
	if err := m.EnsurePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got := m.PodCgroupParent(g); got != "/bed" {
		t.Errorf("PodCgroupParent = %s, want the root /bed", got)
	}
	if _, err := os.Stat(filepath.Join(mountRoot, "cpu/bed/kubepods")); err == nil {
		t.Errorf("kubepods created without --cgroups-per-qos")
	}
	if _, err := os.Stat(filepath.Join(mountRoot, "blkio/bed/blkio.throttle.read_bps_device")); err == nil {
		t.Errorf("blkio rule written though BlkioAccounting is off")
	}
}

// fakeV2 is a cgroup v2 mount root made of plain directories. cgroupfs
// makes the interface files of a new cgroup; a plain directory needs those
// the library opens without creating them.
func fakeV2(t *testing.T) (mountRoot string) {
	t.Helper()
	mountRoot = t.TempDir()
	writeFiles(t, mountRoot, map[string]string{
		"cgroup.controllers":                         "cpuset cpu io memory pids\n",
		"kubepods/cgroup.subtree_control":            "",
		"kubepods/burstable/cgroup.subtree_control":  "",
		"kubepods/besteffort/cgroup.subtree_control": "",
	})
	return mountRoot
}

func TestManagerV2Files(t *testing.T) {
	mountRoot := fakeV2(t)
	ctx := context.Background()
	m, err := New(ctx, Config{Root: "/", Driver: DriverCgroupfs, PerQOS: true, BlkioAccounting: true, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "cgroup.subtree_control")); !strings.Contains(got, "+memory") || !strings.Contains(got, "+io") {
		t.Errorf("root subtree_control = %q, want every controller enabled", got)
	}
	if got := readTrim(t, filepath.Join(mountRoot, "kubepods/besteffort/cpu.weight")); got != "1" {
		t.Errorf("besteffort cpu.weight = %s, want 1 (2 shares)", got)
	}
	if err := m.EnsurePod(ctx, guaranteedPod("g")); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"kubepods/podg/cpu.max":    "50000 100000",
		"kubepods/podg/memory.max": "67108864",
	} {
		if got := readTrim(t, filepath.Join(mountRoot, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if err := m.EnsurePod(ctx, burstablePod("b", "100m")); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"kubepods/burstable/podb/cpu.max":    "max 100000",
		"kubepods/burstable/podb/memory.max": "max",
	} {
		if got := readTrim(t, filepath.Join(mountRoot, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	mountRoot, sysRoot := fakeV1(t)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown driver", Config{Root: "/", Driver: "docker"}, "--cgroup-driver"},
		{"relative root", Config{Root: "kubelet", Driver: DriverCgroupfs}, "--cgroup-root"},
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		tests = append(tests, struct {
			name string
			cfg  Config
			want string
		}{"systemd without systemd", Config{Root: "/", Driver: DriverSystemd}, "systemd is not this host's init"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.MountRoot, tt.cfg.SysRoot, tt.cfg.Version = mountRoot, sysRoot, 1
			_, err := New(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error about %s", err, tt.want)
			}
		})
	}
}
