package cgroups

import (
	"math"
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

// Figures selects what ReadStats reads of a cgroup, so that a reader that
// needs only some figures opens only their files.
type Figures uint8

const (
	// CPUMemory, which ReadStats always reads, is the cumulative CPU
	// usage (CPUStats.UsageNanos) and the memory figures but the limit and
	// OOMKills: 3 files on v1 (cpuacct.usage, memory.usage_in_bytes,
	// memory.stat) and on v2 (cpu.stat, memory.current, memory.stat). On
	// v2 cpu.stat also fills the rest of CPUStats.
	CPUMemory Figures = 1 << iota
	// LimitFigures are the memory and pids limits (MemoryStats.Limit,
	// PidsStats.Limit): memory.limit_in_bytes and pids.max on v1,
	// memory.max and pids.max on v2.
	LimitFigures
	// Detail is the rest: CPU time by mode and CFS throttling, OOMKills,
	// the pids count and block I/O (6 more files on v1, 3 on v2).
	Detail

	// AllFigures is every figure of Stats.
	AllFigures = CPUMemory | LimitFigures | Detail
)

// Stats reads every figure of the cgroup at path: ReadStats(path,
// AllFigures).
func (m *Manager) Stats(path string) (*Stats, error) { return m.ReadStats(path, AllFigures) }

// ReadStats reads the figures of the cgroup at path (relative to the
// hierarchies' roots, as PodCgroupParent and ContainerCgroup return it) that
// fig selects, on every hierarchy the manager drives: the CPUMemory
// figures always, the Limits and Detail ones if fig has them (else they
// read 0). A cgroup that does not exist yields an error wrapping
// errdefs.ErrNotFound. Safe for concurrent use; it only reads.
//
// It reads only the files these figures come from (see stats_read.go). On
// cgroup v1, block I/O comes from the recursive blkio.throttle files (see
// readBlkioV1), which the kernel fills only for disks whose throttling is
// set up (see doc.go).
func (m *Manager) ReadStats(path string, fig Figures) (*Stats, error) {
	var s *Stats
	var err error
	if m.version == 2 {
		s, _, err = m.readStatsV2(path, fig, nil, nil)
	} else {
		s, _, err = m.readStatsV1(path, fig, nil, nil)
	}
	return s, err
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
