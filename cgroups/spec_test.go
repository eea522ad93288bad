package cgroups

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
)

// CPUSpec reads shares, quota and period as cAdvisor reports them: v1's
// files as they are (no quota: -1), v2's cpu.weight mapped back to shares
// and cpu.max split (no quota: "max").
func TestCPUSpec(t *testing.T) {
	v1Root, sysRoot := fakeV1(t)
	writeFiles(t, v1Root, map[string]string{
		"cpu/kubepods/podg/cpu.shares": "512\n", "cpu/kubepods/podg/cpu.cfs_quota_us": "50000\n", "cpu/kubepods/podg/cpu.cfs_period_us": "100000\n",
		"cpu/kubepods/podb/cpu.shares": "2\n", "cpu/kubepods/podb/cpu.cfs_quota_us": "-1\n", "cpu/kubepods/podb/cpu.cfs_period_us": "100000\n",
	})
	v2Root := fakeV2(t)
	writeFiles(t, v2Root, map[string]string{
		"kubepods/podg/cpu.weight": "20\n", "kubepods/podg/cpu.max": "50000 100000\n",
		"kubepods/podb/cpu.weight": "1\n", "kubepods/podb/cpu.max": "max 100000\n",
		"kubepods/podx/cpu.max": "nonsense\n",
	})
	v1m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: v1Root, SysRoot: sysRoot, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	v2m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: v2Root, SysRoot: t.TempDir(), Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *Manager
		path string
		want CPUSpec
	}{
		{"v1 quota", v1m, "/kubepods/podg", CPUSpec{Shares: 512, QuotaMicros: 50000, PeriodMicros: 100000}},
		{"v1 no quota", v1m, "/kubepods/podb", CPUSpec{Shares: 2, PeriodMicros: 100000}},
		// 2 + 19*262142/9999 = 500 (cAdvisor's conversion; 512 shares
		// were written as weight 20).
		{"v2 quota", v2m, "/kubepods/podg", CPUSpec{Shares: 500, QuotaMicros: 50000, PeriodMicros: 100000}},
		{"v2 no quota", v2m, "/kubepods/podb", CPUSpec{Shares: 2, PeriodMicros: 100000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.m.CPUSpec(tc.path)
			if err != nil || got != tc.want {
				t.Errorf("CPUSpec(%s) = %+v, %v; want %+v", tc.path, got, err, tc.want)
			}
		})
	}
	if _, err := v1m.CPUSpec("/kubepods/gone"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a gone cgroup: %v, want ErrNotFound", err)
	}
	if _, err := v2m.CPUSpec("/kubepods/podx"); err == nil {
		t.Errorf("a malformed cpu.max: no error")
	}
}
