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
// 2), every directory is listed.
func (m *Manager) WalkProcs(p string, known []string, each func(pid int) bool) {
	top := filepath.Join(m.cfg.MountRoot, p)
	if m.version == 1 {
		top = filepath.Join(m.cfg.MountRoot, string(cgroup1.Pids), p)
	}
	r := newReader()
	defer r.release()
	if !r.procsAt(unix.AT_FDCWD, file(top, "cgroup.procs"), each) {
		return
	}
	var st unix.Stat_t
	if err := fstatatRetry(unix.AT_FDCWD, top, &st); err != nil || st.Nlink == 2 {
		return // gone, or no subdirectory
	}
	if names := childNames(p, known); names != nil && int(st.Nlink)-2 == len(names) {
		// Read them all before telling each: if one is gone, p is listed.
		var pids []int
		collect := func(pid int) bool { pids = append(pids, pid); return true }
		all := true
		for _, name := range names {
			if _, found := r.procsBelow(unix.AT_FDCWD, file(top, name), collect); !found {
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
	r.procsChildren(unix.AT_FDCWD, top, each)
}

// childNames are the names of the cgroups of known relative to p, nil
// unless each is right below p and named once.
func childNames(p string, known []string) []string {
	if len(known) == 0 {
		return nil
	}
	names := make([]string, 0, len(known))
	for _, k := range known {
		name, ok := strings.CutPrefix(k, strings.TrimSuffix(p, "/")+"/")
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
	if !r.procsAt(dirfd, file(name, "cgroup.procs"), each) {
		return false, true
	}
	var st unix.Stat_t
	if err := fstatatRetry(dirfd, name, &st); err != nil {
		return true, false
	}
	if st.Nlink == 2 {
		return true, true // no subdirectory
	}
	return r.procsChildren(dirfd, name, each), true
}

// procsChildren lists the directory at name (relative to dirfd) and walks
// each of its subdirectories; false when each asked to stop.
func (r reader) procsChildren(dirfd int, name string, each func(pid int) bool) bool {
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
// name (relative to dirfd), none when it cannot be read; false when each
// asked to stop.
func (r reader) procsAt(dirfd int, name string, each func(pid int) bool) bool {
	data, err := r.readAt(dirfd, name, false)
	if err != nil {
		return true
	}
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if pid, err := strconv.Atoi(string(bytes.TrimSpace(line))); err == nil && !each(pid) {
			return false
		}
	}
	return true
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
	r.procsAt(unix.AT_FDCWD, file(dir, "cgroup.procs"), func(pid int) bool {
		pids = append(pids, pid)
		return true
	})
	return pids
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
