package cgroups

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	"golang.org/x/sys/unix"
)

// Procs returns the PIDs in the cgroup at p and below it, on one
// hierarchy (pids on v1); none when it is gone. A cgroup removed during
// the walk is skipped. Safe for concurrent use; it only reads.
func (m *Manager) Procs(p string) []int {
	var pids []int
	m.WalkProcs(p, nil, func(pid int) bool {
		pids = append(pids, pid)
		return true
	})
	return pids
}

// WalkProcs calls each with the PIDs in the cgroup at p and below it, as
// Procs finds them, until each returns false. known, if any, are the
// cgroups right below p that the caller knows of (named as ContainerCgroup
// names them: a pod's sandbox and containers): when p has no others, the
// walk reads them without listing p. Safe for concurrent use; it only
// reads.
//
// The stats endpoints call it for every pod, so it walks with few system
// calls and no per-directory allocation: a cgroup's subdirectories are
// listed (getdents into the pooled buffer, their cgroup.procs then read by
// paths relative to the directory's descriptor) only when its link count
// says it has some, and for p only when known does not name them all:
// cgroupfs (kernfs) keeps a directory's link count at 2 plus its
// subdirectories. On a filesystem that does not (a link count other than
// 2), every directory is listed. StatsFiles.WalkProcs walks the same
// through directories it keeps open.
func (m *Manager) WalkProcs(p string, known []string, each func(pid int) bool) {
	m.walkProcs(pathDirs{m}, p, known, each)
}

// cgroupDirs locates the directories of the cgroups a walk reads, on the
// hierarchy that has their cgroup.procs (pids on v1).
type cgroupDirs interface {
	// at returns a directory descriptor and a name relative to it that
	// locate the cgroup's directory; the name "" is the descriptor's own.
	at(cgroup string) (dirfd int, name string)
	// again is asked when at's answer did not lead to the cgroup's
	// cgroup.procs; ok is false unless it has another answer (a
	// directory kept open of a cgroup since removed, and maybe made again
	// at the same path), which replaces at's (whose descriptor it may
	// have closed).
	again(cgroup string) (dirfd int, name string, ok bool)
}

// pathDirs locates cgroups by their paths.
type pathDirs struct{ m *Manager }

func (d pathDirs) at(cgroup string) (int, string) { return unix.AT_FDCWD, d.m.procsDir(cgroup) }

func (pathDirs) again(string) (int, string, bool) { return 0, "", false }

// procsDir is the directory of the cgroup at p on the hierarchy that has
// its cgroup.procs.
func (m *Manager) procsDir(p string) string {
	if m.version == 1 {
		return filepath.Join(m.cfg.MountRoot, string(cgroup1.Pids), p)
	}
	return filepath.Join(m.cfg.MountRoot, p)
}

func (m *Manager) walkProcs(dirs cgroupDirs, p string, known []string, each func(pid int) bool) {
	r := newReader()
	defer r.release()
	dirfd, name, goOn, found := r.cgroupProcs(dirs, p, each)
	if !goOn || !found {
		return
	}
	var st unix.Stat_t
	if err := statAt(dirfd, name, &st); err != nil || st.Nlink == 2 {
		return // gone, or no subdirectory
	}
	if names := childNames(p, known); names != nil && int(st.Nlink)-2 == len(names) {
		// Read them all before telling each: if one is gone, p is listed.
		var pids []int
		collect := func(pid int) bool { pids = append(pids, pid); return true }
		all := true
		for _, k := range known {
			if _, found := r.cgroupProcsBelow(dirs, k, collect); !found {
				all = false
				break
			}
		}
		if all {
			for _, pid := range pids {
				if !each(pid) {
					return
				}
			}
			return
		}
	}
	r.procsChildren(dirfd, name, each)
}

// cgroupProcs calls each with the PIDs in the cgroup.procs of the cgroup,
// located through dirs (asked again when its answer does not lead to the
// file), and returns where the cgroup's directory is. goOn is false when
// each asked to stop; found is false when the cgroup is not there.
func (r reader) cgroupProcs(dirs cgroupDirs, cgroup string, each func(pid int) bool) (dirfd int, name string, goOn, found bool) {
	dirfd, name = dirs.at(cgroup)
	goOn, read := r.procsAt(dirfd, file(name, "cgroup.procs"), each)
	if read {
		return dirfd, name, goOn, true
	}
	if fd, n, ok := dirs.again(cgroup); ok {
		dirfd, name = fd, n
		if goOn, read = r.procsAt(dirfd, file(name, "cgroup.procs"), each); read {
			return dirfd, name, goOn, true
		}
	}
	// No cgroup.procs: there is a cgroup if there is a directory (a
	// filesystem that is not cgroupfs, in tests).
	var st unix.Stat_t
	return dirfd, name, true, statAt(dirfd, name, &st) == nil
}

// cgroupProcsBelow is procsBelow for a cgroup located through dirs.
func (r reader) cgroupProcsBelow(dirs cgroupDirs, cgroup string, each func(pid int) bool) (goOn, found bool) {
	dirfd, name, goOn, found := r.cgroupProcs(dirs, cgroup, each)
	if !goOn || !found {
		return goOn, found
	}
	return r.subdirsBelow(dirfd, name, each)
}

// childNames are the names of the cgroups of known relative to p, nil
// unless each is right below p and named once.
func childNames(p string, known []string) []string {
	if len(known) == 0 {
		return nil
	}
	names := make([]string, 0, len(known))
	prefix := strings.TrimSuffix(p, "/") + "/"
	for _, k := range known {
		name, ok := strings.CutPrefix(k, prefix)
		if !ok || name == "" || strings.Contains(name, "/") || slices.Contains(names, name) {
			return nil
		}
		names = append(names, name)
	}
	return names
}

// procsBelow calls each with the PIDs of the cgroup at name (relative to
// dirfd) and of every cgroup below it. goOn is false when each asked to
// stop; found is false when the cgroup is not there.
func (r reader) procsBelow(dirfd int, name string, each func(pid int) bool) (goOn, found bool) {
	if goOn, _ := r.procsAt(dirfd, file(name, "cgroup.procs"), each); !goOn {
		return false, true
	}
	return r.subdirsBelow(dirfd, name, each)
}

// subdirsBelow walks the cgroups below the one at name (relative to
// dirfd), if its link count says it has some, as procsBelow.
func (r reader) subdirsBelow(dirfd int, name string, each func(pid int) bool) (goOn, found bool) {
	var st unix.Stat_t
	if err := statAt(dirfd, name, &st); err != nil {
		return true, false
	}
	if st.Nlink == 2 {
		return true, true // no subdirectory
	}
	return r.procsChildren(dirfd, name, each), true
}

// procsChildren lists the directory at name (relative to dirfd; "" for
// dirfd's own) and walks each of its subdirectories; false when each
// asked to stop.
func (r reader) procsChildren(dirfd int, name string, each func(pid int) bool) bool {
	if name == "" {
		name = "." // dirfd may be an O_PATH descriptor, which lists nothing
	}
	fd, err := openatRetry(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return true
	}
	defer unix.Close(fd) //nolint:errcheck // read-only
	for _, sub := range r.subdirs(fd) {
		if goOn, _ := r.procsBelow(fd, sub, each); !goOn {
			return false
		}
	}
	return true
}

// procsAt calls each with the PIDs listed in the cgroup.procs file at
// name (relative to dirfd), none when it cannot be read (read false);
// goOn is false when each asked to stop.
func (r reader) procsAt(dirfd int, name string, each func(pid int) bool) (goOn, read bool) {
	data, err := r.readAt(dirfd, name, false)
	if err != nil {
		return true, false
	}
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if pid, err := strconv.Atoi(string(bytes.TrimSpace(line))); err == nil && !each(pid) {
			return false, true
		}
	}
	return true, true
}

// subdirs lists the names of the subdirectories of the open directory fd,
// reading its entries into r's buffer; entries of unknown type (a
// filesystem that does not give types; cgroupfs does) are listed too.
func (r reader) subdirs(fd int) []string {
	var out []string
	for {
		buf := *r.buf
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return out
		}
		out = appendSubdirs(out, buf[:n])
	}
}

// appendSubdirs appends the names of the directories among the
// linux_dirent64 records in b (ino u64, off s64, reclen u16, type u8,
// name NUL-terminated), but "." and "..".
func appendSubdirs(out []string, b []byte) []string {
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			return out
		}
		if t := b[18]; t == unix.DT_DIR || t == unix.DT_UNKNOWN {
			name := b[nameOff:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				out = append(out, s)
			}
		}
		b = b[reclen:]
	}
	return out
}

// procsOf returns the PIDs in the cgroup at dir (not below it).
func procsOf(dir string) []int {
	r := newReader()
	defer r.release()
	var pids []int
	_, _ = r.procsAt(unix.AT_FDCWD, file(dir, "cgroup.procs"), func(pid int) bool {
		pids = append(pids, pid)
		return true
	})
	return pids
}

// statAt stats the file at name relative to dirfd, or dirfd's own for
// "".
func statAt(dirfd int, name string, st *unix.Stat_t) error {
	if name == "" {
		for {
			err := unix.Fstat(dirfd, st)
			if !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	}
	return fstatatRetry(dirfd, name, st)
}

func fstatatRetry(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func openatRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
