package ctrdtest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Teardown bounds.
const (
	daemonGrace   = 10 * time.Second // SIGTERM to SIGKILL for containerd
	killWait      = 5 * time.Second  // after SIGKILL
	runcTimeout   = 15 * time.Second // one "runc delete --force"
	cleanupBudget = 90 * time.Second // whole teardown
	shimSockDir   = "/run/containerd/s"
	cniResultsDir = "/var/lib/cni/results"
)

// Cleanup tears down the instance in dir from its state.json alone: it
// stops containerd, kills the instance's shims and containers, unmounts
// everything under dir, deletes the instance's bridge, cgroups and CNI
// cache entries, removes dir and releases the network slot. It does not
// talk CRI, so it works after the process that started the instance died.
// It is idempotent: a dir that no longer exists is not an error. It must
// not run concurrently with Start or Stop on the same dir.
func Cleanup(dir string) error {
	ctx, cancel := cleanupContext()
	defer cancel()
	return cleanup(ctx, dir)
}

// cleanupContext is the one place a fresh, bounded context is made for
// teardown that must run even after the caller's context was cancelled.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cleanupBudget)
}

func cleanup(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("cleanup %q: %w", dir, err)
	}
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	s, err := loadInstance(abs)
	if err != nil {
		return fmt.Errorf("cleanup %q: %w", abs, err)
	}
	return teardown(ctx, s)
}

// teardown runs every step even when one fails and joins their errors.
func teardown(ctx context.Context, s *instance) error {
	errs := []error{
		stopDaemon(ctx, s),
		killShims(ctx, s),
		killContainers(ctx, s),
		unmountAll(s.Dir),
		deleteNetwork(s),
		removeCgroupParent(ctx, s),
	}
	if err := errors.Join(errs...); err != nil {
		// Something may still be mounted or running there: keep dir and the
		// slot so that a later Cleanup (bedclean) can finish the job.
		return fmt.Errorf("teardown %q: %w", s.Dir, err)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("remove instance dir %q: %w", s.Dir, err)
	}
	return releaseSlot(s.SlotFile, s.Dir)
}

// stopDaemon SIGTERMs containerd (and any ctr talking to it), then SIGKILLs.
// A process counts as ours only if its argv names our config or socket, so
// a recycled PID is never signalled.
func stopDaemon(ctx context.Context, s *instance) error {
	pids, err := findProcs(func(argv []string) bool {
		return !isShim(argv) && (slices.Contains(argv, s.configPath()) || slices.Contains(argv, s.socket()))
	})
	if err != nil {
		return err
	}
	if err := terminate(ctx, pids, daemonGrace, killWait); err != nil {
		return fmt.Errorf("stop containerd of %q: %w", s.Dir, err)
	}
	return nil
}

// killShims SIGKILLs every shim whose argv names our socket or dir (only
// those) and removes the sockets they leave in /run/containerd/s.
func killShims(ctx context.Context, s *instance) error {
	var argvs [][]string
	pids, err := findProcs(func(argv []string) bool {
		if isShim(argv) && argsName(argv, s.socket(), s.Dir) {
			argvs = append(argvs, argv)
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	var errs []error
	if alive := signalAndWait(kctx, pids, unix.SIGKILL); len(alive) > 0 {
		errs = append(errs, fmt.Errorf("shims %v of %q survive SIGKILL", alive, s.Dir))
	}
	for _, argv := range argvs {
		for _, sock := range shimSockets(argv) {
			errs = append(errs, ignoreNotExist(os.Remove(sock)))
		}
	}
	return errors.Join(errs...)
}

// shimSockets are the socket files a shim with this argv listens on:
// /run/containerd/s/sha256(address/namespace/id[/debug]), the scheme of
// containerd's shim.SocketAddress in 1.6 and 2.x.
func shimSockets(argv []string) []string {
	addr, ns, id := flagValue(argv, "address"), flagValue(argv, "namespace"), flagValue(argv, "id")
	if addr == "" || ns == "" || id == "" {
		return nil
	}
	base := filepath.Join(addr, ns, id)
	var out []string
	for _, p := range []string{base, filepath.Join(base, "debug")} {
		out = append(out, filepath.Join(shimSockDir, fmt.Sprintf("%x", sha256.Sum256([]byte(p)))))
	}
	return out
}

// runcState is the part of runc's state.json teardown needs.
type runcState struct {
	CgroupPaths map[string]string `json:"cgroup_paths"`
}

// killContainers force-deletes every container left in the instance's runc
// root ("runc delete --force" kills its processes and removes its cgroups),
// then kills and removes whatever cgroup runc left behind.
func killContainers(ctx context.Context, s *instance) error {
	states, err := filepath.Glob(filepath.Join(s.runcRoot(), "*", "*", "state.json"))
	if err != nil {
		return fmt.Errorf("list runc containers under %q: %w", s.runcRoot(), err)
	}
	var errs []error
	for _, path := range states {
		id := filepath.Base(filepath.Dir(path))
		errs = append(errs, killContainer(ctx, s.Runc, path), removeCNIResults("*", id))
	}
	return errors.Join(errs...)
}

// killContainer deletes the container whose runc state file is path.
func killContainer(ctx context.Context, runc, path string) error {
	var st runcState
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &st) // a torn file still gets "runc delete"
	}
	root, id := filepath.Dir(filepath.Dir(path)), filepath.Base(filepath.Dir(path))
	rctx, cancel := context.WithTimeout(ctx, runcTimeout)
	defer cancel()
	out, runcErr := exec.CommandContext(rctx, runc, "--root", root, "delete", "--force", id).CombinedOutput()
	// Whatever runc could not kill is still in the container's cgroups
	// (never signal st.InitPID directly: after a delete it may be reused).
	var errs []error
	for _, cg := range st.CgroupPaths {
		if underCgroupMount(cg) {
			errs = append(errs, removeCgroup(ctx, cg))
		}
	}
	if err := errors.Join(errs...); err != nil {
		if runcErr != nil {
			err = errors.Join(fmt.Errorf("runc delete: %w: %s", runcErr, strings.TrimSpace(string(out))), err)
		}
		return fmt.Errorf("delete container %q: %w", id, err)
	}
	return ignoreNotExist(os.RemoveAll(filepath.Dir(path)))
}

// removeCgroupParent removes the instance's cgroup parent subtree from
// every cgroup hierarchy, killing anything still inside.
func removeCgroupParent(ctx context.Context, s *instance) error {
	if s.Slot == 0 {
		return nil // no slot, no cgroup parent handed out
	}
	mounts, err := CgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		errs = append(errs, removeCgroup(ctx, filepath.Join(m, s.cgroupParent())))
	}
	return errors.Join(errs...)
}

// underCgroupMount reports whether path lies strictly below a cgroup
// hierarchy's mount point, so that teardown never touches a root cgroup.
func underCgroupMount(path string) bool {
	mounts, err := CgroupMounts()
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if strings.HasPrefix(path, m+"/") {
			return true
		}
	}
	return false
}

// removeCgroup kills every process in the cgroup tree at path and removes
// it, deepest first. A missing path is not an error.
func removeCgroup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return ignoreNotExist(err)
	}
	var dirs []string
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for _, d := range slices.Backward(dirs) {
		errs = append(errs, removeOneCgroup(ctx, d))
	}
	return errors.Join(errs...)
}

// removeOneCgroup kills the processes in one cgroup and rmdirs it,
// retrying while the kernel still counts dying tasks.
func removeOneCgroup(ctx context.Context, dir string) error {
	rctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	for {
		for _, pid := range cgroupProcs(dir) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		select {
		case <-rctx.Done():
			return fmt.Errorf("remove cgroup %q: %w", dir, err)
		case <-time.After(pollInterval):
		}
	}
}

// cgroupProcs lists the PIDs in one cgroup.
func cgroupProcs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
