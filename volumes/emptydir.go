package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// emptyDirPlugin sets up emptyDir volumes: a directory of mode 0777 on the
// root-dir's disk, or for medium Memory a tmpfs mounted there.
type emptyDirPlugin struct {
	cfg *Config
}

func (p *emptyDirPlugin) dirName() string { return emptyDirPluginDir }

func (p *emptyDirPlugin) setUp(ctx context.Context, req setUpRequest) (volume, error) {
	ed := req.vol.EmptyDir
	if ed == nil {
		ed = &v1.EmptyDirVolumeSource{}
	}
	switch medium := ed.Medium; {
	case medium == v1.StorageMediumDefault:
		if err := makeVolumeDir(req.dir); err != nil {
			return volume{}, fmt.Errorf("emptyDir: %w", err)
		}
	case medium == v1.StorageMediumMemory:
		size := memoryBackedSize(req.pod, ed.SizeLimit, p.cfg.NodeAllocatable)
		if err := ensureTmpfs(ctx, req.dir, size); err != nil {
			return volume{}, fmt.Errorf("emptyDir medium Memory: %w", err)
		}
	case medium == v1.StorageMediumHugePages || strings.HasPrefix(string(medium), string(v1.StorageMediumHugePagesPrefix)):
		return volume{}, fmt.Errorf("emptyDir medium %s is not supported: minikubelet does not manage huge pages; use medium Memory or the default", medium)
	default:
		return volume{}, fmt.Errorf("emptyDir medium %q is not supported: use \"\" (disk) or Memory", medium)
	}
	if sc := req.pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := handToGroup(req.dir, *sc.FSGroup); err != nil {
			return volume{}, fmt.Errorf("emptyDir: fsGroup: %w", err)
		}
	}
	return volume{hostPath: req.dir}, nil
}

// handToGroup gives a writable volume's directory to the pod's fsGroup, as
// the kubelet's SetVolumeOwnership does: group gid, group-writable and
// setgid, so that files the containers create there belong to the group.
// Only the directory itself, and only when its group differs (the
// kubelet's fsGroupChangePolicy OnRootMismatch; for the new, empty
// directory of an emptyDir the same as Always).
func handToGroup(dir string, gid int64) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int64(st.Gid) == gid && fi.Mode()&os.ModeSetgid != 0 {
		return nil
	}
	if err := os.Lchown(dir, -1, int(gid)); err != nil {
		return err
	}
	return os.Chmod(dir, fi.Mode().Perm()|0o070|os.ModeSetgid)
}

// volumeDirMode is the mode of a volume directory the agent creates, as
// the kubelet's emptyDir makes it: anyone may write, whatever user the
// containers run as.
const volumeDirMode os.FileMode = 0o777

// makeVolumeDir creates dir with mode 0777 (whatever the umask) and its
// parents as needed. An existing dir is left as it is: a container may
// have changed its mode.
func makeVolumeDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s exists and is not a directory", dir)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("check volume directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	if err := os.Mkdir(dir, volumeDirMode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create volume directory: %w", err)
	}
	// Mkdir's mode is cut by the umask.
	if err := os.Chmod(dir, volumeDirMode); err != nil {
		return fmt.Errorf("set mode of volume directory: %w", err)
	}
	return nil
}

// memoryBackedSize is the size of a memory-backed volume's tmpfs, as the
// kubelet computes it: the smallest of the volume's sizeLimit, the pod's
// memory limit (when every container declares one) and the node's
// allocatable memory, ignoring those that are unset or zero. 0 means
// unsized: the kernel's default, half of the RAM.
func memoryBackedSize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var size int64
	consider := func(v int64) {
		if v > 0 && (size == 0 || v < size) {
			size = v
		}
	}
	if sizeLimit != nil {
		consider(sizeLimit.Value())
	}
	if limit, ok := podMemoryLimit(pod); ok {
		consider(limit)
	}
	if q, ok := allocatable[v1.ResourceMemory]; ok {
		consider(q.Value())
	}
	return size
}

// podMemoryLimit is the pod's memory limit as its cgroup gets it: the sum
// of the limits of its regular and sidecar containers, or the largest
// limit of an init container plus the sidecars started before it if that
// is more. ok is false when a container declares no memory limit (the pod
// is then not limited).
func podMemoryLimit(pod *v1.Pod) (limit int64, ok bool) {
	limitOf := func(c *v1.Container) (int64, bool) {
		q, found := c.Resources.Limits[v1.ResourceMemory]
		if !found || q.IsZero() {
			return 0, false
		}
		return q.Value(), true
	}
	var sidecars, initMax int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l, found := limitOf(c)
		if !found {
			return 0, false
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars += l
			initMax = max(initMax, sidecars)
			continue
		}
		initMax = max(initMax, sidecars+l)
	}
	sum := sidecars
	for i := range pod.Spec.Containers {
		l, found := limitOf(&pod.Spec.Containers[i])
		if !found {
			return 0, false
		}
		sum += l
	}
	return max(sum, initMax), true
}
