package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// The stats endpoints read every pod's and container's cgroup on each fresh
// snapshot: at 100 pods, some 300 cgroups. containerd/cgroups' Stat reads
// every file of every controller (about 40 on v1: usage_percpu, the
// max_usage, failcnt, kmem, hugetlb and rdma files, the non-recursive blkio
// files...), each through an *os.File that registers with the runtime's
// poller, which cost some 0.6 ms of CPU per cgroup. The readers below open
// only the files of the figures asked for (ReadStats: 3 files for
// CPUMemory on v1 and v2, 11 on v1 and 8 on v2 for AllFigures) with plain
// open/read/close calls into a pooled buffer, and parse them in place. The
// figures are the same: stats_test.go checks them against the files, and
// TestStatsMatchLibrary against containerd/cgroups on the same files.

// statBufs are the buffers the readers read files into: memory.stat, the
// largest file read, is under 2 KiB on v1 and 4 KiB on v2.
var statBufs = sync.Pool{New: func() any { b := make([]byte, 8192); return &b }}

// statFile is one of the statistics files ReadStats reads: an index
// into statFiles.
type statFile int

const (
	v1CPUAcctUsage statFile = iota
	v1CPUAcctStat
	v1CPUStat
	v1MemoryUsage
	v1MemoryLimit
	v1MemoryStat
	v1MemoryOOM
	v1PidsCurrent
	v1PidsMax
	v1BlkioBytes
	v1BlkioOps
	v2CPUStat
	v2MemoryCurrent
	v2MemoryMax
	v2MemoryStat
	v2MemoryEvents
	v2PidsCurrent
	v2PidsMax
	v2IOStat
	v1CPUShares
	v1CFSQuota
	v1CFSPeriod
	v2CPUWeight
	v2CPUMax
	numStatFiles
)

// statFiles are the statistics files: their controller's hierarchy on v1
// ("" on v2, whose one hierarchy has them all) and their names. Read-only.
var statFiles = [numStatFiles]struct{ hierarchy, name string }{
	v1CPUAcctUsage:  {"cpuacct", "cpuacct.usage"},
	v1CPUAcctStat:   {"cpuacct", "cpuacct.stat"},
	v1CPUStat:       {"cpu", "cpu.stat"},
	v1MemoryUsage:   {"memory", "memory.usage_in_bytes"},
	v1MemoryLimit:   {"memory", "memory.limit_in_bytes"},
	v1MemoryStat:    {"memory", "memory.stat"},
	v1MemoryOOM:     {"memory", "memory.oom_control"},
	v1PidsCurrent:   {"pids", "pids.current"},
	v1PidsMax:       {"pids", "pids.max"},
	v1BlkioBytes:    {"blkio", "blkio.throttle.io_service_bytes_recursive"},
	v1BlkioOps:      {"blkio", "blkio.throttle.io_serviced_recursive"},
	v2CPUStat:       {"", "cpu.stat"},
	v2MemoryCurrent: {"", "memory.current"},
	v2MemoryMax:     {"", "memory.max"},
	v2MemoryStat:    {"", "memory.stat"},
	v2MemoryEvents:  {"", "memory.events"},
	v2PidsCurrent:   {"", "pids.current"},
	v2PidsMax:       {"", "pids.max"},
	v2IOStat:        {"", "io.stat"},
	v1CPUShares:     {"cpu", "cpu.shares"},
	v1CFSQuota:      {"cpu", "cpu.cfs_quota_us"},
	v1CFSPeriod:     {"cpu", "cpu.cfs_period_us"},
	v2CPUWeight:     {"", "cpu.weight"},
	v2CPUMax:        {"", "cpu.max"},
}

// cgroupFiles are the open files of one cgroup: each statistics file's
// descriptor plus one (0 for a file not open), and so the descriptor of
// its directory on the hierarchy that has its cgroup.procs (an O_PATH
// descriptor, which walks open files relative to).
type cgroupFiles struct {
	stat     [numStatFiles]int32
	procsDir int32
}

// reader reads files into a pooled buffer: a cgroup's statistics files
// (stat), through its open files if it has them, and other files (readAt).
// Not safe for concurrent use; release it when done.
type reader struct {
	buf *[]byte
	// mountRoot and cgroup locate the statistics files.
	mountRoot, cgroup string
	// open, if set, keeps the statistics files open.
	open *cgroupFiles
}

func newReader() reader { return reader{buf: statBufs.Get().(*[]byte)} }

func (r reader) release() { statBufs.Put(r.buf) }

// path is the path of the cgroup's statistics file f.
func (r reader) path(f statFile) string {
	return file(filepath.Join(r.mountRoot, statFiles[f].hierarchy, r.cgroup), statFiles[f].name)
}

// stat returns the content of the cgroup's statistics file f, which the
// kernel writes whole at each read (see readAt), valid until the next
// read: through its open file if it has one, opening it if r keeps files
// open, and again if the open one's cgroup is gone (ENODEV), maybe made
// anew since at the same path. A missing file wraps errdefs.ErrNotFound.
func (r reader) stat(f statFile) ([]byte, error) {
	if r.open == nil {
		return r.readAt(unix.AT_FDCWD, r.path(f), true)
	}
	if fd := int(r.open.stat[f]) - 1; fd >= 0 {
		if b, err := r.pread(fd); err == nil {
			return b, nil
		}
		_ = unix.Close(fd)
		r.open.stat[f] = 0
	}
	path := r.path(f)
	fd, err := openatRetry(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &readError{path: path, err: err}
	}
	b, err := r.pread(fd)
	if err != nil {
		_ = unix.Close(fd)
		return nil, &readError{path: path, err: err}
	}
	r.open.stat[f] = int32(fd) + 1
	return b, nil
}

// pread reads the whole of a single-record file (see readAt) from offset
// 0 into r's buffer, growing it until the content fits.
func (r reader) pread(fd int) ([]byte, error) {
	for {
		buf := *r.buf
		n, err := unix.Pread(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n < len(buf) {
			return buf[:n], nil
		}
		*r.buf = append(buf, make([]byte, len(buf))...)
	}
}

// readAt is read of the file at path relative to the directory dirfd.
//
// With whole, a read that does not fill the buffer is taken as the end of
// the file, which saves the read that would return 0 (a quarter of the
// cost of a file). That holds for a file the kernel writes in one record
// (one seq_file show call, grown to fit before any byte is copied): every
// statistics and limit file read here; and for a regular file. It does not
// for files of many records, such as cgroup.procs (one per PID) or
// /proc/<pid>/net/dev, whose reads stop at a page: those are read to EOF.
func (r reader) readAt(dirfd int, path string, whole bool) ([]byte, error) {
	fd, err := openatRetry(dirfd, path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &readError{path: path, err: err}
	}
	defer unix.Close(fd) //nolint:errcheck // read-only
	buf := *r.buf
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
			*r.buf = buf
		}
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &readError{path: path, err: err}
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
		if whole && n < len(buf) {
			return buf[:n], nil
		}
	}
}

// readError names the file a read failed on; a missing file wraps
// errdefs.ErrNotFound.
type readError struct {
	path string
	err  error
}

func (e *readError) Error() string { return fmt.Sprintf("read %s: %v", e.path, e.err) }

func (e *readError) Unwrap() []error {
	if errors.Is(e.err, unix.ENOENT) || errors.Is(e.err, unix.ENODEV) {
		return []error{e.err, errdefs.ErrNotFound}
	}
	return []error{e.err}
}

// uint reads a statistics file holding one number ("max" reads as
// math.MaxUint64).
func (r reader) uint(f statFile) (uint64, error) {
	b, err := r.stat(f)
	if err != nil {
		return 0, err
	}
	v, ok := parseValue(bytes.TrimSpace(b))
	if !ok {
		return 0, fmt.Errorf("read %s: %q is not a number", r.path(f), bytes.TrimSpace(b))
	}
	return v, nil
}

// keyed reads a statistics file of "key value" lines and calls set for
// each key it has, with the value parsed. key is valid during the call
// only.
func (r reader) keyed(f statFile, set func(key []byte, v uint64)) error {
	b, err := r.stat(f)
	if err != nil {
		return err
	}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		key, val, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			continue
		}
		v, ok := parseValue(bytes.TrimSpace(val))
		if !ok {
			return fmt.Errorf("read %s: %q is not a number", r.path(f), bytes.TrimSpace(val))
		}
		set(key, v)
	}
	return nil
}

// memoryStatKeys are the memory.stat keys of the figures ReadStats
// takes from it, by cgroup version.
type memoryStatKeys struct {
	inactiveFile, rss, cache, pgfault, pgmajfault string
}

var (
	// v1: the hierarchy's totals (the cgroup and its descendants).
	v1MemoryStatKeys = memoryStatKeys{"total_inactive_file", "total_rss", "total_cache", "total_pgfault", "total_pgmajfault"}
	v2MemoryStatKeys = memoryStatKeys{"inactive_file", "anon", "file", "pgfault", "pgmajfault"}
)

// memoryStat reads f, a memory.stat file, into m's RSS, cache and page
// faults, and sets its working set from m.Usage, which must be read
// first.
func (r reader) memoryStat(f statFile, keys *memoryStatKeys, m *MemoryStats) error {
	var inactiveFile uint64
	if err := r.keyed(f, func(k []byte, v uint64) {
		switch string(k) {
		case keys.inactiveFile:
			inactiveFile = v
		case keys.rss:
			m.RSS = v
		case keys.cache:
			m.Cache = v
		case keys.pgfault:
			m.PageFaults = v
		case keys.pgmajfault:
			m.MajorPageFaults = v
		}
	}); err != nil {
		return err
	}
	m.WorkingSet = workingSet(m.Usage, inactiveFile)
	return nil
}

func parseValue(b []byte) (uint64, bool) {
	if string(b) == "max" {
		return math.MaxUint64, true
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

// userHZ is the unit of cpuacct.stat: clock ticks of 1/100 s on Linux.
const userHZ = 100

// file is dir/name; dir is clean, as filepath.Join leaves it, or "" for
// name alone (relative to a directory descriptor).
func file(dir, name string) string {
	switch dir {
	case "":
		return name
	case "/":
		return dir + name
	}
	return dir + "/" + name
}

// ranNoTask reports whether a cgroup whose CPU usage now reads usage has
// run no task since prev, an earlier read of it with Detail, read its
// usage: the usage is counted to the nanosecond (to the microsecond on
// v2) and grows whenever a task of the cgroup, or of one below it, is on
// a CPU. A usage of 0 says nothing (a cgroup made anew, whose tasks have
// not run yet), nor does a nil prev. See StatsFiles.ReadStatsAfter.
func ranNoTask(prev *Earlier, usage uint64) bool {
	return prev != nil && prev.Stats != nil && usage != 0 && usage == prev.Stats.CPU.UsageNanos
}

// cfsSettled is how long after a cgroup's tasks last ran its CFS
// counters (v1 cpu.stat) no longer move: the kernel's period timer counts
// a period at each expiry while the cgroup has a quota and stops at the
// second expiry that finds it idle, and a period is at most 1 s (the
// largest cpu.cfs_period_us); a second more for a late timer.
const cfsSettled = 3 * time.Second

func (m *Manager) readStatsV1(path string, fig Figures, open *cgroupFiles, prev *Earlier) (*Stats, bool, error) {
	r := newReader()
	r.mountRoot, r.cgroup, r.open = m.cfg.MountRoot, path, open
	defer r.release()
	var s Stats
	usage, err := r.uint(v1CPUAcctUsage)
	if err != nil {
		// The first file read tells whether the cgroup exists.
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, false, fmt.Errorf("cgroup %s: %w", path, err)
		}
		return nil, false, err
	}
	s.CPU.UsageNanos = usage
	if s.Memory.Usage, err = r.uint(v1MemoryUsage); err != nil {
		return nil, false, err
	}
	if err := r.memoryStat(v1MemoryStat, &v1MemoryStatKeys, &s.Memory); err != nil {
		return nil, false, err
	}
	if fig&LimitFigures != 0 {
		limit, err := r.uint(v1MemoryLimit)
		if err != nil {
			return nil, false, err
		}
		s.Memory.Limit = limitOrZero(limit)
		if max, err := r.uint(v1PidsMax); err == nil {
			s.Pids.Limit = limitOrZero(max)
		} else if !errors.Is(err, errdefs.ErrNotFound) {
			return nil, false, err
		}
	}
	if fig&Detail == 0 {
		return &s, false, nil
	}
	idle := ranNoTask(prev, usage)
	if idle && prev.IdleFor >= cfsSettled {
		// The CFS period timer has stopped since the tasks last ran.
		e := &prev.Stats.CPU
		s.CPU.Periods, s.CPU.ThrottledPeriods, s.CPU.ThrottledNanos = e.Periods, e.ThrottledPeriods, e.ThrottledNanos
	} else if err := r.keyed(v1CPUStat, func(k []byte, v uint64) {
		switch string(k) {
		case "nr_periods":
			s.CPU.Periods = v
		case "nr_throttled":
			s.CPU.ThrottledPeriods = v
		case "throttled_time":
			s.CPU.ThrottledNanos = v
		}
	}); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, err
	}
	if idle {
		e := prev.Stats
		s.CPU.UserNanos, s.CPU.SystemNanos = e.CPU.UserNanos, e.CPU.SystemNanos
		s.Memory.OOMKills, s.Pids.Current, s.IO = e.Memory.OOMKills, e.Pids.Current, e.IO
		return &s, true, nil
	}
	if err := r.keyed(v1CPUAcctStat, func(k []byte, v uint64) {
		switch string(k) {
		case "user":
			s.CPU.UserNanos = v * (1e9 / userHZ)
		case "system":
			s.CPU.SystemNanos = v * (1e9 / userHZ)
		}
	}); err != nil {
		return nil, false, err
	}
	if err := r.keyed(v1MemoryOOM, func(k []byte, v uint64) {
		if string(k) == "oom_kill" {
			s.Memory.OOMKills = v
		}
	}); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, err
	}
	if cur, err := r.uint(v1PidsCurrent); err == nil {
		s.Pids.Current = cur
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, err
	}
	if s.IO, err = readBlkioV1(r); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, fmt.Errorf("read block I/O of cgroup %s: %w", path, err)
	}
	return &s, false, nil
}

func (m *Manager) readStatsV2(path string, fig Figures, open *cgroupFiles, prev *Earlier) (*Stats, bool, error) {
	r := newReader()
	r.mountRoot, r.cgroup, r.open = m.cfg.MountRoot, path, open
	defer r.release()
	var s Stats
	if err := r.keyed(v2CPUStat, func(k []byte, v uint64) {
		switch string(k) {
		case "usage_usec":
			s.CPU.UsageNanos = v * 1000
		case "user_usec":
			s.CPU.UserNanos = v * 1000
		case "system_usec":
			s.CPU.SystemNanos = v * 1000
		case "nr_periods":
			s.CPU.Periods = v
		case "nr_throttled":
			s.CPU.ThrottledPeriods = v
		case "throttled_usec":
			s.CPU.ThrottledNanos = v * 1000
		}
	}); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, false, fmt.Errorf("cgroup %s: %w", path, err)
		}
		return nil, false, err
	}
	idle := fig&Detail != 0 && ranNoTask(prev, s.CPU.UsageNanos)
	// The memory and pids controllers may not be enabled for the cgroup
	// (a missing file); their figures then read 0.
	var err error
	if s.Memory.Usage, err = r.uint(v2MemoryCurrent); err == nil {
		if fig&LimitFigures != 0 {
			limit, err := r.uint(v2MemoryMax)
			if err != nil {
				return nil, false, err
			}
			s.Memory.Limit = limitOrZero(limit)
		}
		if err := r.memoryStat(v2MemoryStat, &v2MemoryStatKeys, &s.Memory); err != nil {
			return nil, false, err
		}
		switch {
		case idle:
			s.Memory.OOMKills = prev.Stats.Memory.OOMKills
		case fig&Detail != 0:
			if err := r.keyed(v2MemoryEvents, func(k []byte, v uint64) {
				if string(k) == "oom_kill" {
					s.Memory.OOMKills = v
				}
			}); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return nil, false, err
			}
		}
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, err
	}
	if fig&LimitFigures != 0 {
		if max, err := r.uint(v2PidsMax); err == nil {
			s.Pids.Limit = limitOrZero(max)
		} else if !errors.Is(err, errdefs.ErrNotFound) {
			return nil, false, err
		}
	}
	if fig&Detail == 0 {
		return &s, false, nil
	}
	if idle {
		s.Pids.Current = prev.Stats.Pids.Current
	} else if cur, err := r.uint(v2PidsCurrent); err == nil {
		s.Pids.Current = cur
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, err
	}
	// io.stat is read in any case: on v2 the kernel writes a cgroup's
	// dirty pages back in its name, whether its tasks run or not.
	io, err := readIOStatV2(r)
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return nil, false, err
	}
	s.IO = io
	return &s, idle, nil
}

// readIOStatV2 parses io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N
// dbytes=N dios=N" per disk.
func readIOStatV2(r reader) ([]IOStats, error) {
	b, err := r.stat(v2IOStat)
	if err != nil {
		return nil, err
	}
	var out []IOStats
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		var fields [16][]byte
		n := fieldsOf(line, fields[:])
		if n == 0 {
			continue
		}
		if n > len(fields) {
			n = len(fields) // more keys than io.stat has: the first ones
		}
		major, minor, ok := parseDevice(fields[0])
		if !ok {
			continue
		}
		s := IOStats{Major: major, Minor: minor}
		for _, f := range fields[1:n] {
			k, v, ok := bytes.Cut(f, []byte{'='})
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				continue
			}
			switch string(k) {
			case "rbytes":
				s.ReadBytes = n
			case "wbytes":
				s.WriteBytes = n
			case "rios":
				s.ReadOps = n
			case "wios":
				s.WriteOps = n
			}
		}
		var d *IOStats
		out, d = ioStatsOf(out, major, minor)
		*d = s // a disk listed again: its last line, as before
	}
	return out, nil
}

// parseDevice parses "MAJ:MIN".
func parseDevice(b []byte) (major, minor uint64, ok bool) {
	ma, mi, found := bytes.Cut(b, []byte{':'})
	if !found {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.ParseUint(string(ma), 10, 64)
	minor, err2 = strconv.ParseUint(string(mi), 10, 64)
	return major, minor, err1 == nil && err2 == nil
}
