package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
)

// Limits are what node allocatable writes into the cgroup holding every
// pod, or into a reserved cgroup: cpu shares, and a memory and pids limit
// (0: none).
type Limits struct {
	CPUShares uint64
	Memory    int64
	Pids      int64
}

// SetPodsLimits writes l into the cgroup holding every pod
// (Root/kubepods), as the kubelet's node allocatable enforcement: its
// cpu shares, memory limit and pids.max ("max" for 0). Without PerQOS it
// does nothing. A memory limit below what the pods use now is refused by
// the kernel and returned.
func (m *Manager) SetPodsLimits(ctx context.Context, l Limits) error {
	if !m.cfg.PerQOS {
		return nil
	}
	return m.setLimits(ctx, qosName(m.root, v1.PodQOSGuaranteed), l)
}

// LimitReserved writes l into the cgroup at path (--kube-reserved-cgroup,
// --system-reserved-cgroup), which must exist; with cpuOnly only its cpu
// shares (the -compressible enforcements).
func (m *Manager) LimitReserved(ctx context.Context, path string, l Limits, cpuOnly bool) error {
	n, err := parseRoot(path, m.cfg.Driver)
	if err != nil {
		return err
	}
	if !m.exists(n.path(m.cfg.Driver)) {
		return fmt.Errorf("cgroup %s does not exist: %w", path, errdefs.ErrNotFound)
	}
	if cpuOnly {
		l.Memory, l.Pids = 0, 0
	}
	return m.setLimits(ctx, n, l)
}

func (m *Manager) setLimits(ctx context.Context, n name, l Limits) error {
	res := ResourceConfig{CPUShares: max(l.CPUShares, MinShares), CPUQuota: -1, CPUPeriod: QuotaPeriod, Memory: l.Memory}
	if err := m.create(ctx, n, &res); err != nil {
		return fmt.Errorf("limit cgroup %s: %w", n.path(m.cfg.Driver), err)
	}
	dir := filepath.Join(m.cfg.MountRoot, n.path(m.cfg.Driver))
	if m.version == 1 {
		dir = filepath.Join(m.cfg.MountRoot, string(cgroup1.Pids), n.path(m.cfg.Driver))
	}
	v := "max"
	if l.Pids > 0 {
		v = strconv.FormatInt(l.Pids, 10)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(v), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("limit cgroup %s: pids.max: %w", n.path(m.cfg.Driver), err)
	}
	return nil
}
