package cgroups

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
)

// benchPodCgroup makes a pod cgroup of the host's real v1 hierarchies,
// below a root of its own (see realRoot), and returns the manager and its
// path; it skips on other hosts.
func benchPodCgroup(b *testing.B, uid types.UID) (*Manager, string) {
	b.Helper()
	root := realRoot(b)
	_, ctx := ktesting.NewTestContext(b)
	m, err := New(ctx, Config{Root: root, Driver: DriverCgroupfs, PerQOS: true})
	if err != nil {
		b.Fatal(err)
	}
	if m.Version() != 1 {
		b.Skip("not a cgroup v1 host")
	}
	g := guaranteedPod(uid)
	if err := m.EnsurePod(ctx, g); err != nil {
		b.Fatal(err)
	}
	return m, m.PodCgroupParent(g)
}

// BenchmarkStatsV1 reads a pod cgroup; the stats endpoints make one such
// read per pod and per running container.
func BenchmarkStatsV1(b *testing.B) {
	m, p := benchPodCgroup(b, "bench-g")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Stats(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCPUSpecV1 reads the cpu spec of the same kind of pod cgroup;
// /metrics/cadvisor makes one such read per cgroup it reports, besides
// the Stats read.
func BenchmarkCPUSpecV1(b *testing.B) {
	m, p := benchPodCgroup(b, "bench-s")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.CPUSpec(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsV1CPUMemory reads what /metrics/resource and the Summary
// need of the same kind of pod cgroup (ReadStats with CPUMemory).
func BenchmarkStatsV1CPUMemory(b *testing.B) {
	m, p := benchPodCgroup(b, "bench-cm")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.ReadStats(p, CPUMemory); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcsV1 lists the processes of a pod cgroup with two child
// cgroups (a sandbox's and a container's), as the Summary and
// /metrics/cadvisor do for every pod.
func BenchmarkProcsV1(b *testing.B) {
	m, p := benchPodCgroup(b, "bench-p")
	for _, c := range []string{"sandbox", "ctr"} {
		if err := os.Mkdir(filepath.Join(DefaultMountRoot, "pids", p, c), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Procs(p)
	}
}

// BenchmarkStatsFilesV1 reads every figure of the same kind of pod cgroup
// through open files (StatsFiles), as the stats endpoints do.
func BenchmarkStatsFilesV1(b *testing.B) {
	m, p := benchPodCgroup(b, "bench-f")
	f := m.NewStatsFiles()
	defer f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ReadStats(p, AllFigures); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsFilesV1CPUMemory is BenchmarkStatsV1CPUMemory through
// open files.
func BenchmarkStatsFilesV1CPUMemory(b *testing.B) {
	m, p := benchPodCgroup(b, "bench-fcm")
	f := m.NewStatsFiles()
	defer f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ReadStats(p, CPUMemory); err != nil {
			b.Fatal(err)
		}
	}
}
