package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// podLogDirMinAge is how long a pod log directory must have gone unchanged
// before housekeeping may remove it for a pod nothing refers to: a pod
// worker makes the directory before it runs the pod's sandbox, and a pod
// added again under the same UID right after the in-use snapshot must not
// lose the directory it has just made.
const podLogDirMinAge = 10 * time.Second

// podLogDirs removes the log directories, <dir>/<namespace>_<name>_<uid>,
// of pods that are not in use: the ones a crash leaves when the agent is
// killed after it made a pod's log directory and before the pod had a
// sandbox, and the pod's manifest is gone by the time it starts again.
// Nothing in the runtime then refers to the pod, so no worker ever
// terminates it and removes the directory. The kubelet's container GC
// removes such directories the same way (evictPodLogsDirectories). Used
// by PodDirs.Run only.
type podLogDirs struct {
	// dir is --pod-logs-dir; "" turns the cleanup off.
	dir   string
	clock clock.PassiveClock
}

// cleanup removes the log directories of pods inUse does not list, that
// have not changed for podLogDirMinAge. It reads the directory before it
// asks inUse: a log directory is made by a pod's worker, which is in use
// from before it makes the directory until after it removed it, so a
// directory listed and then found not in use is left over. Entries whose
// names are not <namespace>_<name>_<uid>, and anything but directories,
// are not the agent's and are left alone.
func (l podLogDirs) cleanup(ctx context.Context, inUse func() map[types.UID]bool) error {
	if l.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list pod log directories: %w", err)
	}
	candidates := map[string]types.UID{}
	for _, e := range entries {
		if uid, ok := podUIDOfLogDir(e.Name()); ok && e.IsDir() {
			candidates[e.Name()] = uid
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	used := inUse()
	logger := klog.FromContext(ctx)
	var errs []error
	for name, uid := range candidates {
		if used[uid] {
			continue
		}
		path := filepath.Join(l.dir, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() || l.clock.Since(fi.ModTime()) < podLogDirMinAge {
			continue
		}
		logger.Info("Removing the log directory of a pod the agent no longer runs", "podUID", uid, "path", path)
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// podUIDOfLogDir reads the pod UID from a log directory's name,
// <namespace>_<name>_<uid>; neither a namespace nor a pod name may hold
// "_".
func podUIDOfLogDir(name string) (types.UID, bool) {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", false
	}
	return types.UID(parts[2]), true
}
