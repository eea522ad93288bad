package cgroups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// killPoll is how often KillPodProcesses looks whether the processes it
// signalled are gone, by the Manager's clock.
const killPoll = 20 * time.Millisecond

// KillPodProcesses sends SIGKILL to every process in the cgroups of the
// pod with uid (in every hierarchy, children included) and waits until
// none is left or ctx ends. It returns the PIDs it signalled, and an error
// naming the cgroups still busy when ctx ends first.
//
// It is for a pod the runtime holds nothing of any more: whatever is left
// in its cgroups then is a process no one else will ever stop, such as the
// init process of a sandbox whose RunPodSandbox was cut short, which
// containerd 2.1 forgets without killing it. The kubelet kills such
// processes too before it removes a pod's cgroup (its pod container
// manager's tryKillingCgroupProcesses). A pod the runtime still runs must
// be stopped through the runtime instead.
func (m *Manager) KillPodProcesses(ctx context.Context, uid types.UID) ([]int, error) {
	if !m.cfg.PerQOS {
		return nil, nil
	}
	var dirs []string
	for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		p := podName(m.root, class, uid).path(m.cfg.Driver)
		for _, h := range m.hierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, p), func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
		}
	}
	var signalled []int
	for {
		var busy []string
		for _, dir := range dirs {
			procs := procsOf(dir)
			if len(procs) == 0 {
				continue
			}
			busy = append(busy, dir)
			for _, pid := range procs {
				// ESRCH: it has just exited. A process can only be in one
				// cgroup per hierarchy, and the pod's cgroups are the
				// agent's: the PID is not someone else's.
				if err := unix.Kill(pid, unix.SIGKILL); err == nil && !slices.Contains(signalled, pid) {
					signalled = append(signalled, pid)
				}
			}
		}
		if len(busy) == 0 {
			slices.Sort(signalled)
			return signalled, nil
		}
		select {
		case <-ctx.Done():
			return signalled, fmt.Errorf("kill the processes in the cgroups of pod %s: still busy: %v: %w", uid, busy, ctx.Err())
		case <-m.cfg.Clock.After(killPoll):
		}
	}
}
