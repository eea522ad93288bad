package cgroups

import (
	"testing"

	"k8s.io/klog/v2/ktesting"
)

// BenchmarkStatsV1 reads a pod cgroup of the host's real v1 hierarchies,
// below a root of its own (see realRoot); the stats endpoints make one
// such read per pod and per running container.
func BenchmarkStatsV1(b *testing.B) {
	root := realRoot(b)
	_, ctx := ktesting.NewTestContext(b)
	m, err := New(ctx, Config{Root: root, Driver: DriverCgroupfs, PerQOS: true})
	if err != nil {
		b.Fatal(err)
	}
	if m.Version() != 1 {
		b.Skip("not a cgroup v1 host")
	}
	g := guaranteedPod("bench-g")
	if err := m.EnsurePod(ctx, g); err != nil {
		b.Fatal(err)
	}
	p := m.PodCgroupParent(g)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Stats(p); err != nil {
			b.Fatal(err)
		}
	}
}
