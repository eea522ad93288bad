package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// subPathsDir holds the subPath bind mounts of a pod's containers, as the
// kubelet names it: <pod dir>/volume-subpaths/<volume>/<container>/<index>.
const subPathsDir = "volume-subpaths"

// maxSymlinkHops bounds the symlinks one subPath resolution follows, as
// the kernel's limit does.
const maxSymlinkHops = 40

// subPathMount is one subPath volume mount of a container: the index-th
// mount of container, of path inside volume, whose host directory is
// volumeRoot.
type subPathMount struct {
	container  string
	index      int
	volume     string
	volumeRoot string
	path       string
}

// bindSubPath resolves m.path inside its volume (creating missing
// directories), and bind-mounts what it found at the container's subPath
// mount point, which it returns.
func (pv *PodVolumes) bindSubPath(ctx context.Context, m subPathMount) (string, error) {
	unlock := pv.m.locks.lock(pv.pod.UID)
	defer unlock()
	root, err := filepath.EvalSymlinks(m.volumeRoot)
	if err != nil {
		return "", fmt.Errorf("resolve the volume's path: %w", err)
	}
	fd, err := openInside(root, m.path)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd) //nolint:errcheck // an O_PATH descriptor; nothing to flush
	target := filepath.Join(pv.podDir, subPathsDir, m.volume, m.container, strconv.Itoa(m.index))
	if err := bindFd(ctx, fd, target); err != nil {
		return "", err
	}
	return target, nil
}

// dirFrame is one directory of a resolution in progress.
type dirFrame struct {
	fd   int
	name string
}

// openInside opens the file or directory at sub inside root (a real path)
// and returns an O_PATH descriptor of it. Each component is opened from
// its parent's descriptor without following symlinks; a symlink met on
// the way is read and resolved by this function, which refuses any that
// leads out of root (an absolute target outside root, or ".." above it).
// Missing components are created as directories with root's mode. A
// component replaced while being resolved is an error, never a way out.
func openInside(root, sub string) (int, error) {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the volume: %w", err)
	}
	var rootSt unix.Stat_t
	if err := unix.Fstat(rootFd, &rootSt); err != nil {
		_ = unix.Close(rootFd)
		return -1, fmt.Errorf("stat the volume: %w", err)
	}
	perm := rootSt.Mode & 0o7777

	stack := []dirFrame{{fd: rootFd}}
	closeFrom := func(i int) {
		for _, f := range stack[i:] {
			_ = unix.Close(f.fd)
		}
		stack = stack[:i]
	}
	fail := func(err error) (int, error) {
		closeFrom(0)
		return -1, err
	}
	where := func() string {
		names := make([]string, 0, len(stack))
		for _, f := range stack[1:] {
			names = append(names, f.name)
		}
		return strings.Join(names, "/")
	}

	comps := strings.Split(sub, "/")
	hops := 0
	// lastLink names the last symlink followed, for errors.
	lastLink := ""
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 1 {
				if lastLink != "" {
					return fail(fmt.Errorf("leads out of the volume through symlink %s", lastLink))
				}
				return fail(errors.New("leads out of the volume through '..'"))
			}
			closeFrom(len(stack) - 1)
			continue
		}
		parent := stack[len(stack)-1].fd
		var st unix.Stat_t
		err := unix.Fstatat(parent, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			fd, err := makeDirAt(parent, c, perm)
			if err != nil {
				return fail(fmt.Errorf("create directory %q: %w", joinRel(where(), c), err))
			}
			stack = append(stack, dirFrame{fd: fd, name: c})
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("stat %q: %w", joinRel(where(), c), err))
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			hops++
			if hops > maxSymlinkHops {
				return fail(fmt.Errorf("too many levels of symlinks at %q", joinRel(where(), c)))
			}
			target, err := readlinkAt(parent, c)
			if err != nil {
				return fail(fmt.Errorf("read symlink %q: %w", joinRel(where(), c), err))
			}
			lastLink = fmt.Sprintf("%q -> %q", joinRel(where(), c), target)
			if filepath.IsAbs(target) {
				// On the host, an absolute target is a host path: only
				// one inside the volume is followed, from the root.
				rel, inside := strings.CutPrefix(target, root)
				if !inside || (rel != "" && !strings.HasPrefix(rel, "/")) {
					return fail(fmt.Errorf("leads out of the volume through symlink %s", lastLink))
				}
				closeFrom(1)
				comps = append(strings.Split(rel, "/"), comps...)
				continue
			}
			// A relative target goes on from the link's directory; a
			// ".." above the volume's root is refused when met.
			comps = append(strings.Split(target, "/"), comps...)
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR && remaining(comps) {
			return fail(fmt.Errorf("%q is not a directory", joinRel(where(), c)))
		}
		fd, err := unix.Openat(parent, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("open %q: %w", joinRel(where(), c), err))
		}
		var got unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
			_ = unix.Close(fd)
			return fail(fmt.Errorf("%q changed while being resolved; try again", joinRel(where(), c)))
		}
		stack = append(stack, dirFrame{fd: fd, name: c})
	}
	// Keep the last descriptor, close the others.
	last := stack[len(stack)-1].fd
	stack = stack[:len(stack)-1]
	closeFrom(0)
	return last, nil
}

// remaining reports whether comps still names a component.
func remaining(comps []string) bool {
	for _, c := range comps {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// makeDirAt creates the directory name in parent with mode perm (whatever
// the umask) and returns a descriptor of it, opened without following a
// symlink: a directory swapped for a symlink right after mkdirat fails to
// open.
func makeDirAt(parent int, name string, perm uint32) (int, error) {
	if err := unix.Mkdirat(parent, name, perm); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Fchmod(fd, perm); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readlinkAt reads the symlink name in dirfd.
func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// bindFd bind-mounts what fd refers to at target, creating target (a
// directory or an empty file, as fd's object is). A target already bound
// to that object is left as it is; one bound to something else (a subPath
// that changed, a restarted container's) is unmounted and bound again.
func bindFd(ctx context.Context, fd int, target string) error {
	var src unix.Stat_t
	if err := unix.Fstat(fd, &src); err != nil {
		return fmt.Errorf("stat the resolved subPath: %w", err)
	}
	isDir := src.Mode&unix.S_IFMT == unix.S_IFDIR
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create subPath mount point: %w", err)
	}
	var cur unix.Stat_t
	switch err := unix.Stat(target, &cur); {
	case err == nil && cur.Dev == src.Dev && cur.Ino == src.Ino:
		return nil
	case err == nil:
		for range maxUnmountRounds {
			if err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW); err != nil {
				if errors.Is(err, unix.EINVAL) {
					break // not (or no longer) a mount point
				}
				return fmt.Errorf("unmount the old subPath mount %s: %w", target, err)
			}
		}
		if err := unix.Lstat(target, &cur); err != nil {
			return fmt.Errorf("stat subPath mount point: %w", err)
		}
		if (cur.Mode&unix.S_IFMT == unix.S_IFDIR) != isDir {
			if err := os.Remove(target); err != nil {
				return fmt.Errorf("replace subPath mount point: %w", err)
			}
			if err := makeMountPoint(target, isDir); err != nil {
				return err
			}
		}
	case errors.Is(err, unix.ENOENT):
		if err := makeMountPoint(target, isDir); err != nil {
			return err
		}
	default:
		return fmt.Errorf("stat subPath mount point: %w", err)
	}
	source := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount the subPath at %s: %w", target, err)
	}
	klog.FromContext(ctx).V(4).Info("Bind-mounted subPath", "path", target)
	return nil
}

// makeMountPoint creates an empty directory or file at target.
func makeMountPoint(target string, dir bool) error {
	if dir {
		if err := os.Mkdir(target, 0o750); err != nil {
			return fmt.Errorf("create subPath mount point: %w", err)
		}
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o640) //nolint:gosec // G304: under the pod's own directory
	if err != nil {
		return fmt.Errorf("create subPath mount point: %w", err)
	}
	_ = f.Close() // read-only, nothing written
	return nil
}
