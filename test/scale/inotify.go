package scale

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// inotifyInstances is the sysctl that bounds the inotify instances of one
// user (root, for every process of a run).
const inotifyInstances = "/proc/sys/fs/inotify/max_user_instances"

// raiseInotifyInstances makes room for nodes hollow nodes' inotify
// instances (kubemark's hollow kubelet opens several, to watch its config
// and certificates; minikubelet one or two), and returns what puts the
// limit back. With the default of 128, a hundred nodes take them all, and
// whatever else on the host then fails to start a watch: a containerd
// started meanwhile loses its CRI plugin ("failed to create fsnotify
// watcher: too many open files"). A limit already as high is left alone.
func raiseInotifyInstances(nodes int) (restore func() error, err error) {
	b, err := os.ReadFile(inotifyInstances)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", inotifyInstances, err)
	}
	was, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", inotifyInstances, err)
	}
	want := 256 + 8*nodes
	if was >= want {
		return func() error { return nil }, nil
	}
	if err := os.WriteFile(inotifyInstances, []byte(strconv.Itoa(want)), 0o644); err != nil {
		return nil, fmt.Errorf("raise %s from %d to %d: %w", inotifyInstances, was, want, err)
	}
	return func() error {
		return os.WriteFile(inotifyInstances, []byte(strconv.Itoa(was)), 0o644)
	}, nil
}
