package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
)

// CPUSpec is a cgroup's CPU configuration, as cAdvisor reports it
// (container_spec_cpu_shares, _quota, _period).
type CPUSpec struct {
	// Shares is cpu.shares on v1; on v2, cpu.weight converted back to
	// shares as cAdvisor converts it. 0 when the cgroup has no such file
	// (a v2 root).
	Shares uint64
	// QuotaMicros is the CFS quota per period in microseconds, 0 when
	// there is none; PeriodMicros the CFS period.
	QuotaMicros  uint64
	PeriodMicros uint64
}

// CPUSpec reads the CPU configuration of the cgroup at path: three small
// files of the cpu controller on v1 (cpu.shares, cpu.cfs_quota_us,
// cpu.cfs_period_us), two on v2 (cpu.weight, cpu.max), as
// /metrics/cadvisor reports it for every cgroup. A cgroup that does not
// exist yields an error wrapping errdefs.ErrNotFound; a file the cgroup
// lacks leaves its figure 0. Safe for concurrent use; it only reads.
func (m *Manager) CPUSpec(path string) (CPUSpec, error) { return m.readCPUSpec(path, nil) }

// CPUSpec is Manager.CPUSpec through the open files.
func (f *StatsFiles) CPUSpec(path string) (CPUSpec, error) {
	s, err := f.m.readCPUSpec(path, f.files(path))
	f.forgetIfGone(path, err)
	return s, err
}

func (m *Manager) readCPUSpec(path string, open *cgroupFiles) (CPUSpec, error) {
	r := newReader()
	r.mountRoot, r.cgroup, r.open = m.cfg.MountRoot, path, open
	defer r.release()
	var s CPUSpec
	var err error
	if m.version == 2 {
		s, err = r.cpuSpecV2()
	} else {
		s, err = r.cpuSpecV1()
	}
	if errors.Is(err, errGone) {
		return CPUSpec{}, fmt.Errorf("cgroup %s: %w", path, errdefs.ErrNotFound)
	}
	return s, err
}

// errGone says a cgroup's directory does not exist.
var errGone = errors.New("cgroup directory gone")

func (r reader) cpuSpecV1() (CPUSpec, error) {
	var s CPUSpec
	var err error
	if s.Shares, err = r.specUint(v1CPUShares); err != nil {
		return s, err
	}
	if s.PeriodMicros, err = r.specUint(v1CFSPeriod); err != nil {
		return s, err
	}
	quota, err := r.specFile(v1CFSQuota)
	if err != nil || quota == "" || quota == "-1" {
		return s, err
	}
	if s.QuotaMicros, err = strconv.ParseUint(quota, 10, 64); err != nil {
		return s, fmt.Errorf("%s: %w", r.path(v1CFSQuota), err)
	}
	return s, nil
}

// cpuSpecV2 reads cpu.max ("QUOTA PERIOD", QUOTA "max" for none) and
// cpu.weight, in [1, 10000], which maps back to shares in [2, 262144].
func (r reader) cpuSpecV2() (CPUSpec, error) {
	var s CPUSpec
	weight, err := r.specUint(v2CPUWeight)
	if err != nil {
		return s, err
	}
	if weight > 0 {
		s.Shares = 2 + (weight-1)*262142/9999
	}
	cpuMax, err := r.specFile(v2CPUMax)
	if err != nil || cpuMax == "" {
		return s, err
	}
	quota, period, ok := strings.Cut(cpuMax, " ")
	if !ok {
		return s, fmt.Errorf("%s: %q is not QUOTA PERIOD", r.path(v2CPUMax), cpuMax)
	}
	if s.PeriodMicros, err = strconv.ParseUint(period, 10, 64); err != nil {
		return s, fmt.Errorf("%s: %w", r.path(v2CPUMax), err)
	}
	if quota != "max" {
		if s.QuotaMicros, err = strconv.ParseUint(quota, 10, 64); err != nil {
			return s, fmt.Errorf("%s: %w", r.path(v2CPUMax), err)
		}
	}
	return s, nil
}

// specFile returns the trimmed content of the small file f, "" when the
// file does not exist, errGone when its cgroup does not.
func (r reader) specFile(f statFile) (string, error) {
	b, err := r.stat(f)
	if errors.Is(err, errdefs.ErrNotFound) {
		path := r.path(f)
		if _, serr := os.Stat(filepath.Dir(path)); errors.Is(serr, os.ErrNotExist) {
			return "", errGone
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

// specUint reads the small file f holding one unsigned number; 0 when it
// does not exist.
func (r reader) specUint(f statFile) (uint64, error) {
	s, err := r.specFile(f)
	if err != nil || s == "" {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", r.path(f), err)
	}
	return v, nil
}
