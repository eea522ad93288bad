package cgroups

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// Node allocatable's limits on the pods cgroup and a reserved cgroup, and
// --pod-max-pids on a pod cgroup, on v1 and v2 trees.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		version                         int
		shares, memory, pids, podPids   string
		reservedShares, reservedPidsDir string
	}{
		{1, "cpu/kubepods/cpu.shares", "memory/kubepods/memory.limit_in_bytes", "pids/kubepods/pids.max", "pids/kubepods/podg/pids.max", "cpu/system/cpu.shares", "pids/system"},
		{2, "kubepods/cpu.weight", "kubepods/memory.max", "kubepods/pids.max", "kubepods/podg/pids.max", "system/cpu.weight", "system"},
	} {
		t.Run(filepathVersion(tc.version), func(t *testing.T) {
			var mountRoot, sysRoot string
			if tc.version == 1 {
				mountRoot, sysRoot = fakeV1(t)
			} else {
				mountRoot, sysRoot = fakeV2(t), t.TempDir()
			}
			ctx := context.Background()
			m, err := New(ctx, Config{Root: "/", Driver: DriverCgroupfs, PerQOS: true, MountRoot: mountRoot, SysRoot: sysRoot, Version: tc.version, PodPidsLimit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SetPodsLimits(ctx, Limits{CPUShares: 1843, Memory: 7 << 30, Pids: 31768}); err != nil {
				t.Fatal(err)
			}
			wantShares := "1843"
			if tc.version == 2 {
				wantShares = strconv.FormatUint(cgroup2.ConvertCPUSharesToCgroupV2Value(1843), 10)
			}
			for file, want := range map[string]string{tc.shares: wantShares, tc.memory: "7516192768", tc.pids: "31768"} {
				if got := readTrim(t, filepath.Join(mountRoot, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			if err := m.SetPodsLimits(ctx, Limits{CPUShares: 2048}); err != nil {
				t.Fatal(err)
			}
			if got := readTrim(t, filepath.Join(mountRoot, tc.pids)); got != "max" {
				t.Errorf("%s = %q after the limit was lifted, want max", tc.pids, got)
			}
			if err := m.EnsurePod(ctx, guaranteedPod("g")); err != nil {
				t.Fatal(err)
			}
			if got := readTrim(t, filepath.Join(mountRoot, tc.podPids)); got != "100" {
				t.Errorf("%s = %q, want --pod-max-pids 100", tc.podPids, got)
			}
			if err := m.LimitReserved(ctx, "/system", Limits{CPUShares: 204, Memory: 1 << 30}, true); err == nil {
				t.Error("limited a reserved cgroup that does not exist")
			}
			writeFiles(t, mountRoot, map[string]string{filepath.Join(tc.reservedPidsDir, "pids.max"): "max", "memory/system/memory.limit_in_bytes": "-1"})
			if err := m.LimitReserved(ctx, "/system", Limits{CPUShares: 2048, Memory: 1 << 30}, true); err != nil {
				t.Fatal(err)
			}
			wantShares = "2048"
			if tc.version == 2 {
				wantShares = strconv.FormatUint(cgroup2.ConvertCPUSharesToCgroupV2Value(2048), 10)
			}
			if got := readTrim(t, filepath.Join(mountRoot, tc.reservedShares)); got != wantShares {
				t.Errorf("%s = %q, want %s", tc.reservedShares, got, wantShares)
			}
		})
	}
}

func filepathVersion(v int) string {
	if v == 1 {
		return "v1"
	}
	return "v2"
}
