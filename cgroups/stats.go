package cgroups

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/containerd/errdefs"
)

// Stats is what one cgroup's files say at one instant, counted over the
// cgroup and every cgroup below it. Cumulative figures only grow while the
// cgroup lives.
type Stats struct {
	CPU    CPUStats
	Memory MemoryStats
	Pids   PidsStats
	// IO holds one entry per disk the cgroup did I/O on, by device number.
	IO []IOStats
}

// CPUStats are cumulative CPU times in nanoseconds.
type CPUStats struct {
	UsageNanos  uint64
	UserNanos   uint64
	SystemNanos uint64
	// CFS bandwidth control: periods elapsed and throttled, and the time
	// spent throttled.
	Periods          uint64
	ThrottledPeriods uint64
	ThrottledNanos   uint64
}

// MemoryStats are in bytes, except the counts.
type MemoryStats struct {
	// Usage is all memory charged to the cgroup, page cache included.
	Usage uint64
	// WorkingSet is Usage less the inactive page cache, which the kernel
	// reclaims first: what the kubelet evicts on and dashboards show.
	WorkingSet uint64
	// RSS is anonymous memory (v1 total_rss, v2 anon); Cache the page
	// cache (v1 total_cache, v2 file).
	RSS   uint64
	Cache uint64
	// PageFaults and MajorPageFaults are cumulative counts.
	PageFaults      uint64
	MajorPageFaults uint64
	// Limit is the memory limit; 0 when there is none.
	Limit uint64
	// OOMKills counts the processes the OOM killer killed in the cgroup.
	OOMKills uint64
}

// PidsStats counts tasks (v1 pids.current counts threads).
type PidsStats struct {
	Current uint64
	// Limit is pids.max; 0 when there is none.
	Limit uint64
}

// IOStats is one disk's block I/O: bytes and operations completed.
type IOStats struct {
	Major, Minor uint64
	ReadBytes    uint64
	WriteBytes   uint64
	ReadOps      uint64
	WriteOps     uint64
}

// noLimit is where a limit read from a cgroup means "none": v1 writes
// unlimited as a page-rounded 2^63-1, v2 as "max".
const noLimit = 1 << 62

// Stats reads the cgroup at path (relative to the hierarchies' roots, as
// PodCgroupParent and ContainerCgroup return it) on every hierarchy the
// manager drives. A cgroup that does not exist yields an error wrapping
// errdefs.ErrNotFound. Safe for concurrent use; it only reads.
//
// On cgroup v1 the cpu, cpuacct, memory and pids figures come from
// containerd/cgroups; block I/O from the recursive blkio.throttle files
// (see readBlkioV1), which the kernel fills only for disks whose throttling
// is set up (see doc.go). On v2 everything comes from containerd/cgroups.
func (m *Manager) Stats(path string) (*Stats, error) {
	if m.version == 2 {
		return m.statsV2(path)
	}
	return m.statsV1(path)
}

func (m *Manager) statsV1(path string) (*Stats, error) {
	subsystems := m.statSubsystems
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subsystems, nil }))
	if err != nil {
		if errors.Is(err, cgroup1.ErrCgroupDeleted) {
			return nil, fmt.Errorf("cgroup %s: %w", path, errdefs.ErrNotFound)
		}
		return nil, fmt.Errorf("load cgroup %s: %w", path, err)
	}
	met, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return nil, fmt.Errorf("read cgroup %s: %w", path, err)
	}
	var s Stats
	if c := met.GetCPU(); c != nil {
		u, t := c.GetUsage(), c.GetThrottling()
		s.CPU = CPUStats{
			UsageNanos: u.GetTotal(), UserNanos: u.GetUser(), SystemNanos: u.GetKernel(),
			Periods: t.GetPeriods(), ThrottledPeriods: t.GetThrottledPeriods(), ThrottledNanos: t.GetThrottledTime(),
		}
	}
	if mem := met.GetMemory(); mem != nil {
		usage := mem.GetUsage().GetUsage()
		s.Memory = MemoryStats{
			Usage:           usage,
			WorkingSet:      workingSet(usage, mem.GetTotalInactiveFile()),
			RSS:             mem.GetTotalRSS(),
			Cache:           mem.GetTotalCache(),
			PageFaults:      mem.GetTotalPgFault(),
			MajorPageFaults: mem.GetTotalPgMajFault(),
			Limit:           limitOrZero(mem.GetUsage().GetLimit()),
			OOMKills:        met.GetMemoryOomControl().GetOomKill(),
		}
	}
	if p := met.GetPids(); p != nil {
		s.Pids = PidsStats{Current: p.GetCurrent(), Limit: limitOrZero(p.GetLimit())}
	}
	blkio := filepath.Join(m.cfg.MountRoot, string(cgroup1.Blkio), path)
	if _, err := os.Stat(blkio); err == nil {
		if s.IO, err = readBlkioV1(blkio); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read block I/O of cgroup %s: %w", path, err)
		}
	}
	return &s, nil
}

func (m *Manager) statsV2(path string) (*Stats, error) {
	if _, err := os.Stat(filepath.Join(m.cfg.MountRoot, path)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cgroup %s: %w", path, errdefs.ErrNotFound)
		}
		return nil, err
	}
	cg, err := cgroup2.Load(path, cgroup2.WithMountpoint(m.cfg.MountRoot))
	if err != nil {
		return nil, fmt.Errorf("load cgroup %s: %w", path, err)
	}
	met, err := cg.StatFiltered(cgroup2.StatPids | cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatIO)
	if err != nil {
		return nil, fmt.Errorf("read cgroup %s: %w", path, err)
	}
	var s Stats
	if c := met.GetCPU(); c != nil {
		s.CPU = CPUStats{
			UsageNanos: c.GetUsageUsec() * 1000, UserNanos: c.GetUserUsec() * 1000, SystemNanos: c.GetSystemUsec() * 1000,
			Periods: c.GetNrPeriods(), ThrottledPeriods: c.GetNrThrottled(), ThrottledNanos: c.GetThrottledUsec() * 1000,
		}
	}
	if mem := met.GetMemory(); mem != nil {
		s.Memory = MemoryStats{
			Usage:           mem.GetUsage(),
			WorkingSet:      workingSet(mem.GetUsage(), mem.GetInactiveFile()),
			RSS:             mem.GetAnon(),
			Cache:           mem.GetFile(),
			PageFaults:      mem.GetPgfault(),
			MajorPageFaults: mem.GetPgmajfault(),
			Limit:           limitOrZero(mem.GetUsageLimit()),
			OOMKills:        met.GetMemoryEvents().GetOomKill(),
		}
	}
	if p := met.GetPids(); p != nil {
		s.Pids = PidsStats{Current: p.GetCurrent(), Limit: limitOrZero(p.GetLimit())}
	}
	byDev := map[[2]uint64]*IOStats{}
	for _, e := range met.GetIo().GetUsage() {
		byDev[[2]uint64{e.GetMajor(), e.GetMinor()}] = &IOStats{
			Major: e.GetMajor(), Minor: e.GetMinor(),
			ReadBytes: e.GetRbytes(), WriteBytes: e.GetWbytes(), ReadOps: e.GetRios(), WriteOps: e.GetWios(),
		}
	}
	s.IO = sortedIO(byDev)
	return &s, nil
}

// workingSet is usage less the inactive page cache, as cAdvisor counts it.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

func limitOrZero(v uint64) uint64 {
	if v >= noLimit || v == math.MaxUint64 {
		return 0
	}
	return v
}
