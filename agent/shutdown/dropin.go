package shutdown

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultLogindConfDir is the directory of logind's drop-ins that the
// kubelet writes its own to.
const DefaultLogindConfDir = "/etc/systemd/logind.conf.d"

// dropInName is the manager's drop-in; it sorts after most others, so its
// value wins, as the kubelet's 99-kubelet.conf.
const dropInName = "99-minikubelet.conf"

// writeDropIn writes the logind drop-in setting InhibitDelayMaxSec to d,
// rounded up to whole seconds, into dir, and returns its path. It replaces
// the file atomically: logind never reads half of it.
func writeDropIn(dir string, d time.Duration) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	secs := int64((d + time.Second - 1) / time.Second)
	content := fmt.Sprintf("# Written by minikubelet: --shutdown-grace-period needs logind to let its\n# inhibitor lock delay a shutdown this long.\n[Login]\nInhibitDelayMaxSec=%d\n", secs)
	path := filepath.Join(dir, dropInName)
	tmp, err := os.CreateTemp(dir, "."+dropInName+".*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.WriteString(content)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
