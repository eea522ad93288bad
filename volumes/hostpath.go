package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// hostPathPlugin checks hostPath volumes against their type; containers
// mount the host path itself.
type hostPathPlugin struct{}

func (p *hostPathPlugin) dirName() string { return "" }

func (p *hostPathPlugin) setUp(ctx context.Context, req setUpRequest) (volume, error) {
	hp := req.vol.HostPath
	if hp.Path == "" {
		return volume{}, errors.New("hostPath: path is empty")
	}
	t := v1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	if err := checkHostPath(hp.Path, t); err != nil {
		return volume{}, fmt.Errorf("hostPath type %s: %w", typeName(t), err)
	}
	return volume{hostPath: hp.Path}, nil
}

// typeName is how errors name a hostPath type; the unset type has no name.
func typeName(t v1.HostPathType) string {
	if t == v1.HostPathUnset {
		return `"" (no check)`
	}
	return string(t)
}

// checkHostPath checks (and for the *OrCreate types makes) path as the
// kubelet does before a pod starts. Symlinks are followed: the check is
// about what the path leads to.
func checkHostPath(path string, t v1.HostPathType) error {
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			// As the kubelet: parents too, 0755 under the umask.
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", path, err)
			}
		}
		return expectType(path, fs.ModeDir, "a directory")
	case v1.HostPathDirectory:
		return expectType(path, fs.ModeDir, "a directory")
	case v1.HostPathFileOrCreate:
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			// As the kubelet: an empty file, 0644 under the umask; the
			// parent directory must exist.
			if _, err := os.Stat(filepath.Dir(path)); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("cannot create %s: its directory %s does not exist", path, filepath.Dir(path))
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644) //nolint:gosec // G302,G304: the kubelet's FileOrCreate; the path is the pod's
			if err != nil {
				return fmt.Errorf("create %s: %w", path, err)
			}
			_ = f.Close() // opened read-only, nothing written
		}
		return expectType(path, 0, "a regular file")
	case v1.HostPathFile:
		return expectType(path, 0, "a regular file")
	case v1.HostPathSocket:
		return expectType(path, fs.ModeSocket, "a socket")
	case v1.HostPathCharDev:
		return expectType(path, fs.ModeDevice|fs.ModeCharDevice, "a character device")
	case v1.HostPathBlockDev:
		return expectType(path, fs.ModeDevice, "a block device")
	default:
		return fmt.Errorf("unknown hostPath type %q", t)
	}
}

// expectType checks that path exists and its file type (the type bits of
// fs.FileMode, 0 for a regular file) is want.
func expectType(path string, want fs.FileMode, what string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s does not exist", path)
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if got := fi.Mode().Type(); got != want {
		return fmt.Errorf("%s is %s, not %s", path, describeType(got), what)
	}
	return nil
}

// describeType names a file type for an error message.
func describeType(t fs.FileMode) string {
	switch {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSymlink != 0:
		return "a symlink"
	default:
		return "a file of type " + t.String()
	}
}
