package volumes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// ensureTmpfs creates dir (mode 0777) and mounts a tmpfs of size bytes (0:
// the kernel's default) on it, unless a tmpfs is mounted there already.
// The tmpfs is not resized when size changes.
func ensureTmpfs(ctx context.Context, dir string, size int64) error {
	if err := makeVolumeDir(dir); err != nil {
		return err
	}
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", dir, err)
		}
		if st.Type != unix.TMPFS_MAGIC {
			return fmt.Errorf("%s is a mount point of a filesystem other than tmpfs (magic %#x)", dir, st.Type)
		}
		return nil
	}
	opts := ""
	if size > 0 {
		opts = "size=" + strconv.FormatInt(size, 10)
	}
	// No flags, as the kubelet mounts it; the root of a tmpfs has mode
	// 1777.
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mount tmpfs (%s) on %s: %w", optsOrDefault(opts), dir, err)
	}
	klog.FromContext(ctx).V(3).Info("Mounted tmpfs", "path", dir, "options", optsOrDefault(opts))
	return nil
}

func optsOrDefault(opts string) string {
	if opts == "" {
		return "unsized"
	}
	return opts
}

// isMountPoint reports whether a filesystem other than its parent's is
// mounted on dir. It sees a tmpfs, not a bind mount within one
// filesystem; it is cheap (two lstat calls).
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("stat %s: %w", filepath.Dir(dir), err)
	}
	return st.Dev != parent.Dev, nil
}

// maxUnmountRounds bounds how often tearDownDir reads the mount table and
// unmounts what it finds (mounts stacked on one point take a round each).
const maxUnmountRounds = 8

// tearDownDir unmounts every mount at or under dir, deepest first, then
// removes dir. It never removes anything while a mount is left under dir:
// mounts are found in /proc/self/mountinfo (by dir's real path), which
// sees bind mounts too. A mount the kernel reports busy is detached
// (MNT_DETACH) as the last resort, which takes it out of the tree at
// once. A dir that does not exist is torn down already.
func tearDownDir(ctx context.Context, dir string) error {
	logger := klog.FromContext(ctx)
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// Not made by the agent; never follow it.
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("remove symlink %s: %w", dir, err)
		}
		return nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", dir, err)
	}
	for round := 0; ; round++ {
		points, err := mountPointsUnder(real)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			break
		}
		if round == maxUnmountRounds {
			return fmt.Errorf("%d mounts are left under %s after %d rounds of unmounting (%s); not removing it", len(points), dir, round, strings.Join(points, ", "))
		}
		for _, p := range points {
			if err := unmount(logger, p); err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// unmount unmounts the mount on point, detaching it if it is busy. A
// point no longer mounted is fine.
func unmount(logger klog.Logger, point string) error {
	err := unix.Unmount(point, unix.UMOUNT_NOFOLLOW)
	switch {
	case err == nil, errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
		logger.V(4).Info("Unmounted", "path", point)
		return nil
	case errors.Is(err, unix.EBUSY):
		logger.Info("Mount is busy; detaching it", "path", point)
		if err := unix.Unmount(point, unix.UMOUNT_NOFOLLOW|unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("detach busy mount %s: %w", point, err)
		}
		return nil
	default:
		return fmt.Errorf("unmount %s: %w", point, err)
	}
}

// mountPointsUnder returns the mount points at or under dir (a real path)
// in this process's mount namespace, deepest first.
func mountPointsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	all, err := parseMountPoints(f)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range all {
		if (p == dir || strings.HasPrefix(p, dir+"/")) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/"); di != dj {
			return di > dj
		}
		return out[i] > out[j]
	})
	return out, nil
}

// parseMountPoints returns the mount point (fifth field) of each line of
// a mountinfo table, unescaped.
func parseMountPoints(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			return nil, fmt.Errorf("malformed mountinfo line %q", sc.Text())
		}
		out = append(out, unescapeMountPath(fields[4]))
	}
	return out, sc.Err()
}

// unescapeMountPath undoes the kernel's octal escapes (\040 for a space,
// \011, \012, \134) in a mountinfo path.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
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
