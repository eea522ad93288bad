package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestAllocatableFlags(t *testing.T) {
	cfg := parseFlags(t)
	if !cfg.EnforcePods() || !cfg.FailSwapOn || cfg.PodPidsLimit != -1 {
		t.Errorf("defaults %+v", cfg.AllocatableConfig)
	}
	cfg = parseFlags(t, "--kube-reserved", "cpu=100m,memory=256Mi", "--system-reserved", "pid=1000",
		"--enforce-node-allocatable", "pods,system-reserved", "--system-reserved-cgroup", "/system.slice", "--pod-max-pids", "64", "--fail-swap-on=false")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cfg.KubeReserved, map[string]string{"cpu": "100m", "memory": "256Mi"}) || !slices.Equal(cfg.EnforceNodeAllocatable, []string{"pods", "system-reserved"}) ||
		cfg.PodPidsLimit != 64 || cfg.FailSwapOn {
		t.Errorf("flags %+v", cfg.AllocatableConfig)
	}
	if none := parseFlags(t, "--enforce-node-allocatable", ""); none.EnforcePods() || len(none.EnforceNodeAllocatable) != 0 {
		t.Errorf("--enforce-node-allocatable= gives %v, want nothing enforced", none.EnforceNodeAllocatable)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-reserved", "gpu=1"}, `--kube-reserved: "gpu" cannot be reserved`},
		{[]string{"--enforce-node-allocatable", "kube-reserved"}, `"kube-reserved" needs --kube-reserved-cgroup`},
		{[]string{"--enforce-node-allocatable", "pods,none"}, "none cannot be given with another level"},
		{[]string{"--enforce-node-allocatable", "everything"}, `"everything" is not one of pods`},
		{[]string{"--enforce-node-allocatable", "kube-reserved,kube-reserved-compressible", "--kube-reserved-cgroup", "/k"}, "cannot be given together"},
		{[]string{"--cgroups-per-qos=false"}, `"pods" needs --cgroups-per-qos`},
		{[]string{"--system-reserved-cgroup", "system.slice"}, "must be an absolute cgroup path"},
	} {
		c := parseFlags(t, tc.args...)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if none := parseFlags(t, "--cgroups-per-qos=false", "--enforce-node-allocatable=none"); none.Validate() != nil {
		t.Errorf("--cgroups-per-qos=false with nothing enforced: %v", none.Validate())
	}
	if _, _, err := loadWith(t, header+"memorySwap: {swapBehavior: LimitedSwap}\n"); err == nil || !strings.Contains(err.Error(), "memorySwap.swapBehavior: LimitedSwap is not supported") {
		t.Errorf("LimitedSwap: %v", err)
	}
}
