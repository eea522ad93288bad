package ctrdtest

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	id     int
	point  string
	fstype string
}

// CgroupMounts returns the mount points of the cgroup hierarchies (v1's
// and v2's) in this mount namespace.
func CgroupMounts() ([]string, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out, nil
}

// readMounts parses /proc/self/mountinfo.
func readMounts() ([]mountEntry, error) {
	const path = "/proc/self/mountinfo"
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		id, _ := strconv.Atoi(fields[0])
		out = append(out, mountEntry{id: id, point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	return out, nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder returns the mounts at or below dir, deepest (then newest) first.
func mountsUnder(dir string) ([]mountEntry, error) {
	all, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []mountEntry
	for _, m := range all {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b mountEntry) int {
		if d := strings.Count(b.point, "/") - strings.Count(a.point, "/"); d != 0 {
			return d
		}
		return b.id - a.id
	})
	return out, nil
}

// unmountAll unmounts everything at or below dir, deepest first; a mount
// that stays busy is detached lazily as a last resort.
func unmountAll(dir string) error {
	const passes = 4
	for pass := 0; pass < passes; pass++ {
		mounts, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		if pass > 0 {
			time.Sleep(pollInterval) // let a dying process drop its last reference
		}
		for _, m := range mounts {
			unmountOne(m.point, pass == passes-1)
		}
	}
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("mounts under %q survive unmount: %v", dir, mounts)
	}
	return nil
}

// unmountOne unmounts point; with lazy, a mount that will not go is
// detached instead. Errors are not returned: the caller re-reads mountinfo.
func unmountOne(point string, lazy bool) {
	if err := unix.Unmount(point, 0); err != nil && lazy {
		_ = unix.Unmount(point, unix.MNT_DETACH)
	}
}

// UnmountAll unmounts everything at or below dir, deepest first (a mount
// that stays busy is detached lazily as a last resort), for harnesses that
// run agents on directories of their own (test/cluster's hollow nodes).
func UnmountAll(dir string) error { return unmountAll(dir) }
