package cgroups

import (
	"errors"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// StatsFiles reads cgroups as Manager.ReadStats does, through file
// descriptors it keeps open between reads: a statistics file of cgroupfs
// is written afresh by the kernel at every read from offset 0, so a
// later read is one pread call where a first is open, read and close. On
// this project's hosts (cgroup v1, kernel 6.18) that is some 2 us a file
// instead of 7, which is most of what a scrape of the stats endpoints
// costs at 100 pods.
//
// The cost is kernel memory: each open file keeps a page for the kernel's
// buffer, some 4 KiB a file (measured: 4,000 open and read files, 16.5
// MB of slab), charged to the agent's memory cgroup: 11 files a cgroup
// on v1 (8 on v2) when every figure is read, so some 9 MiB at 100 pods
// with two cgroups each (4 files a cgroup, 3 MiB, for CPUMemory alone).
// Retain closes the files of the cgroups its caller no longer reads; a
// cgroup removed meanwhile (its files read ENODEV) or removed and made
// again at the same path is opened afresh. Open files do not keep a
// cgroup from being removed.
//
// A StatsFiles is not safe for concurrent use; its owner serializes its
// calls (the stats Provider holds its lock while it reads a snapshot).
type StatsFiles struct {
	m *Manager
	// open holds the open files by cgroup path.
	open map[string]*cgroupFiles
}

// NewStatsFiles returns a StatsFiles reading the manager's hierarchies;
// Close closes its files.
func (m *Manager) NewStatsFiles() *StatsFiles {
	return &StatsFiles{m: m, open: map[string]*cgroupFiles{}}
}

// ReadStats is Manager.ReadStats through the open files.
func (f *StatsFiles) ReadStats(path string, fig Figures) (*Stats, error) {
	s, _, err := f.ReadStatsAfter(path, fig, nil)
	return s, err
}

// Earlier is an earlier read of a cgroup, which ReadStatsAfter may take
// figures from.
type Earlier struct {
	// Stats is what a read of the cgroup with Detail returned.
	Stats *Stats
	// IdleFor is how long the cgroup's CPU usage has read as in Stats: the
	// time since the first read that saw it so.
	IdleFor time.Duration
}

// ReadStatsAfter is ReadStats given prev, an earlier read of the same
// cgroup (nil for none). When the cgroup's CPU usage reads as it did in
// prev, none of its tasks has been on a CPU since prev read it, and the
// Detail figures that move only while one runs are taken from prev
// instead of their files; reused says so. Those are OOMKills, the pids
// count and, on v1, the CPU time by mode, block I/O and, once the cgroup
// has been idle for a few seconds (cfsSettled), the CFS counters of
// cpu.stat (on v2 the CPU figures come with the usage, and writeback
// moves io.stat without the cgroup's tasks). On this project's hosts a
// pread of a cgroup file costs 4 to 5 us in a scrape of 100 pods, most of
// it the system call's, and an idle cgroup (a sleeping container, a pod's
// pause) is read in 3 files instead of 8 or 9 on v1 (5 instead of 7 on
// v2). Memory is read in any case: reclaim moves it without the cgroup's
// tasks.
//
// A figure reused is as fresh as prev, which holds as long as the rule
// above does. It can fail to for a task that does not run between being
// counted and the next read: one moved in or out by another process and
// not run (pids), an OOM victim still asleep (OOMKills), a cgroup given a
// CPU quota while idle (the kernel then starts the period timer, which
// counts a period or two); so the caller reads afresh, with a nil prev,
// every so often (the stats Provider: every keptFor). prev's IO is
// shared with the result; neither is modified after.
func (f *StatsFiles) ReadStatsAfter(path string, fig Figures, prev *Earlier) (s *Stats, reused bool, err error) {
	open := f.files(path)
	if f.m.version == 2 {
		s, reused, err = f.m.readStatsV2(path, fig, open, prev)
	} else {
		s, reused, err = f.m.readStatsV1(path, fig, open, prev)
	}
	f.forgetIfGone(path, err)
	return s, reused, err
}

// files returns the open files of the cgroup at path.
func (f *StatsFiles) files(path string) *cgroupFiles {
	open := f.open[path]
	if open == nil {
		open = new(cgroupFiles)
		f.open[path] = open
	}
	return open
}

// forgetIfGone closes the files of the cgroup at path if err says it is
// gone.
func (f *StatsFiles) forgetIfGone(path string, err error) {
	if open := f.open[path]; open != nil && errors.Is(err, errdefs.ErrNotFound) {
		closeAll(open)
		delete(f.open, path)
	}
}

// Retain closes the files of every cgroup for which keep is false.
func (f *StatsFiles) Retain(keep func(cgroup string) bool) {
	for path, open := range f.open {
		if !keep(path) {
			closeAll(open)
			delete(f.open, path)
		}
	}
}

// Close closes every file; the StatsFiles may be used again.
func (f *StatsFiles) Close() { f.Retain(func(string) bool { return false }) }

// Len is how many statistics files are open; Dirs how many directories.
func (f *StatsFiles) Len() int {
	n := 0
	for _, open := range f.open {
		for _, fd := range open.stat {
			if fd != 0 {
				n++
			}
		}
	}
	return n
}

// Dirs is how many directories WalkProcs keeps open.
func (f *StatsFiles) Dirs() int {
	n := 0
	for _, open := range f.open {
		if open.procsDir != 0 {
			n++
		}
	}
	return n
}

func closeAll(open *cgroupFiles) {
	for i, fd := range open.stat {
		if fd != 0 {
			_ = unix.Close(int(fd) - 1)
			open.stat[i] = 0
		}
	}
	if open.procsDir != 0 {
		_ = unix.Close(int(open.procsDir) - 1)
		open.procsDir = 0
	}
}

// WalkProcs is Manager.WalkProcs through the directories of p and of
// known, which it keeps open (O_PATH descriptors, which hold no kernel
// buffer): their cgroup.procs files are then opened by name relative to
// them, which spares the kernel a walk of the whole path (some ten
// components, each checked) for each, and their link counts are read by
// fstat. A cgroup.procs file is still opened afresh at each read: on v1
// a descriptor kept open would serve again the PID list the kernel made
// at its first read, for as long as anyone reads it within a second. A
// directory whose cgroup is gone is closed and opened again by its path,
// in case the cgroup was made again since.
func (f *StatsFiles) WalkProcs(p string, known []string, each func(pid int) bool) {
	f.m.walkProcs(heldDirs{f}, p, known, each)
}

// heldDirs locates cgroups through the directories a StatsFiles holds.
type heldDirs struct{ f *StatsFiles }

func (d heldDirs) at(cgroup string) (int, string) {
	if open := d.f.open[cgroup]; open != nil && open.procsDir != 0 {
		return int(open.procsDir) - 1, ""
	}
	path := d.f.m.procsDir(cgroup)
	fd, err := openatRetry(unix.AT_FDCWD, path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return unix.AT_FDCWD, path // which fails as the directory does
	}
	d.f.files(cgroup).procsDir = int32(fd) + 1
	return fd, ""
}

func (d heldDirs) again(cgroup string) (int, string, bool) {
	open := d.f.open[cgroup]
	if open == nil || open.procsDir == 0 {
		return 0, "", false // at did not open one: the path itself failed
	}
	_ = unix.Close(int(open.procsDir) - 1)
	open.procsDir = 0
	fd, name := d.at(cgroup)
	return fd, name, true
}

// CountProcs counts the processes in the cgroup at p and below it, which
// WalkProcs would list, from pids.current files kept open (one pread
// each) instead of cgroup.procs files, which cannot be kept open (see
// WalkProcs) and which the kernel builds a PID list for at each open on
// v1: at 100 pods that walk was a quarter of a fresh Summary's CPU.
// known must name every cgroup right below p that the caller knows of, as
// for WalkProcs; ok is false, and the caller walks, when the count cannot
// be told this way: known does not name p's children, a pids.current
// cannot be read (v2 without the pids controller, a cgroup gone), or the
// tasks of known do not add up to those of p (tasks in p itself or in
// cgroups below it that known does not name, or a fork or exit between
// the reads).
//
// pids.current counts tasks (threads) at and below its cgroup, so a
// cgroup with 0 or 1 task has as many processes, and only those with more
// are walked, through the directories kept open: a sandbox's pause
// process and single-threaded containers cost one pread. A single task
// is counted while it is a zombie that cgroup.procs no longer lists,
// which for the only task of a container lasts until its shim reaps it.
func (f *StatsFiles) CountProcs(p string, known []string) (n int, ok bool) {
	if childNames(p, known) == nil {
		return 0, false
	}
	total, err := f.pidsCurrent(p)
	if err != nil {
		return 0, false
	}
	if total == 0 {
		return 0, true
	}
	// All the task counts first: when they do not add up, the caller's
	// walk is the only one.
	counts := make([]uint64, len(known))
	var tasks uint64
	for i, k := range known {
		if counts[i], err = f.pidsCurrent(k); err != nil {
			return 0, false
		}
		tasks += counts[i]
	}
	if tasks != total {
		return 0, false
	}
	r := newReader()
	defer r.release()
	for i, k := range known {
		if counts[i] <= 1 {
			n += int(counts[i])
			continue
		}
		if _, found := r.cgroupProcsBelow(heldDirs{f}, k, func(int) bool { n++; return true }); !found {
			return 0, false
		}
	}
	return n, true
}

// pidsCurrent reads the cgroup's pids.current through its open file,
// which it keeps (some 4 KiB of kernel memory, as each; see StatsFiles).
func (f *StatsFiles) pidsCurrent(cgroup string) (uint64, error) {
	r := newReader()
	defer r.release()
	r.mountRoot, r.cgroup, r.open = f.m.cfg.MountRoot, cgroup, f.files(cgroup)
	file := v1PidsCurrent
	if f.m.version == 2 {
		file = v2PidsCurrent
	}
	// A missing file does not close the cgroup's others: on v2 it may be
	// there without the pids controller.
	return r.uint(file)
}
