package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Subsystems lists the v1 hierarchies mounted below root: every one to
// create cgroups in (so that runc finds the pod's cgroup in each, as the
// kubelet leaves it), and the ones Stats reads.
func v1Subsystems(root string) (all, stat []cgroup1.Subsystem) {
	memory := cgroup1.NewMemory(root, cgroup1.OptionalSwap(), cgroup1.IgnoreModules("memsw", "kmem", "kmem.tcp"))
	candidates := []cgroup1.Subsystem{
		cgroup1.NewNamed(root, "systemd"),
		cgroup1.NewFreezer(root),
		cgroup1.NewPids(root),
		cgroup1.NewNetCls(root),
		cgroup1.NewNetPrio(root),
		cgroup1.NewPerfEvent(root),
		cgroup1.NewCpuset(root),
		cgroup1.NewCpu(root),
		cgroup1.NewCpuacct(root),
		memory,
		cgroup1.NewBlkio(root),
		cgroup1.NewRdma(root),
		cgroup1.NewDevices(root),
	}
	if h, err := cgroup1.NewHugetlb(root); err == nil {
		candidates = append(candidates, h)
	}
	for _, s := range candidates {
		p, ok := s.(interface{ Path(string) string })
		if !ok {
			continue
		}
		if _, err := os.Lstat(p.Path("/")); err != nil {
			continue
		}
		all = append(all, s)
		switch s.Name() {
		case cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Memory, cgroup1.Pids:
			stat = append(stat, s)
		}
	}
	return all, stat
}

// create makes the cgroup n, with its ancestors, in every hierarchy and
// writes res into it (nothing when res is nil). It is idempotent.
func (m *Manager) create(ctx context.Context, n name, res *ResourceConfig) error {
	switch {
	case len(n) == 0:
		return nil // a hierarchy's root always exists and is not ours to configure
	case m.cfg.Driver == DriverSystemd:
		return m.createSystemd(ctx, n, res)
	case m.version == 2:
		return m.createV2(n, res)
	}
	return m.createV1(n, res)
}

func (m *Manager) createV1(n name, res *ResourceConfig) error {
	spec := &specs.LinuxResources{}
	if res != nil {
		shares, quota, period := res.CPUShares, res.CPUQuota, res.CPUPeriod
		limit := res.Memory
		if limit == 0 {
			limit = -1 // no limit
		}
		spec.CPU = &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period}
		spec.Memory = &specs.LinuxMemory{Limit: &limit}
		if res.Pids > 0 {
			pids := res.Pids
			spec.Pids = &specs.LinuxPids{Limit: &pids}
		}
	}
	subsystems := m.subsystems
	_, err := cgroup1.New(cgroup1.StaticPath(n.cgroupfs()), spec,
		cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subsystems, nil }))
	return err
}

func (m *Manager) createV2(n name, res *ResourceConfig) error {
	p := n.cgroupfs()
	if err := m.enableControllersV2(p); err != nil {
		return err
	}
	r := v2Resources(res)
	if _, err := cgroup2.NewManager(m.cfg.MountRoot, p, r); err != nil {
		return err
	}
	if res != nil && res.Memory == 0 {
		// The library writes numbers only; no limit is "max".
		if err := os.WriteFile(filepath.Join(m.cfg.MountRoot, p, "memory.max"), []byte("max"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("write memory.max: %w", err)
		}
	}
	return nil
}

// enableControllersV2 enables, from the root down to p's parent, every
// controller each level has in its children, as runc does: a pod's cgroup
// and its containers' need cpu, memory, io and pids.
func (m *Manager) enableControllersV2(p string) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	dir := m.cfg.MountRoot
	for _, part := range parts {
		avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")) //nolint:gosec // G304: a cgroup's interface file
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read controllers of %s: %w", dir, err)
		}
		var enable []string
		for _, c := range strings.Fields(string(avail)) {
			enable = append(enable, "+"+c)
		}
		if len(enable) > 0 {
			//nolint:gosec // G703: dir is below the cgroup mount, built from the configured root
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
				return fmt.Errorf("enable controllers in %s: %w", dir, err)
			}
		}
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// createSystemd makes the slice n through systemd's D-Bus API (cgroup v2
// only; New refuses the systemd driver elsewhere). Its limits are set when
// the slice is first made; later changes are not applied. Not exercised on
// the project's test machines, whose init is not systemd.
func (m *Manager) createSystemd(_ context.Context, n name, res *ResourceConfig) error {
	unit := filepath.Base(n.systemd())
	if m.exists(n.systemd()) {
		return nil
	}
	r := v2Resources(res)
	if _, err := cgroup2.NewSystemd("", unit, -1, r); err != nil {
		return fmt.Errorf("create systemd slice %s: %w", unit, err)
	}
	return nil
}

// removeSystemd stops the slice at p, which removes its cgroup.
func (m *Manager) removeSystemd(_ context.Context, p string) error {
	if !m.exists(p) {
		return nil
	}
	mgr, err := cgroup2.LoadSystemd("", filepath.Base(p))
	if err != nil {
		return err
	}
	if err := mgr.DeleteSystemd(); err != nil {
		return fmt.Errorf("stop systemd slice %s: %w", filepath.Base(p), err)
	}
	return nil
}

// v2Resources converts what the agent writes into a cgroup into cgroup v2
// resources (cpu.weight from the shares, cpu.max, memory.max).
func v2Resources(res *ResourceConfig) *cgroup2.Resources {
	r := &cgroup2.Resources{}
	if res == nil {
		return r
	}
	weight := cgroup2.ConvertCPUSharesToCgroupV2Value(res.CPUShares)
	period := res.CPUPeriod
	var quota *int64
	if res.CPUQuota > 0 {
		q := res.CPUQuota
		quota = &q
	}
	r.CPU = &cgroup2.CPU{Weight: &weight, Max: cgroup2.NewCPUMax(quota, &period)}
	if res.Memory > 0 {
		limit := res.Memory
		r.Memory = &cgroup2.Memory{Max: &limit}
	}
	if res.Pids > 0 {
		r.Pids = &cgroup2.Pids{Max: res.Pids}
	}
	return r
}
