package cgroups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// realRoot returns a cgroup root of the test's own on the host's real
// hierarchies, removed (with anything left in it) when the test ends,
// pass or fail. The test is skipped unless it runs as root on a cgroup v1
// or hybrid host.
func realRoot(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(DefaultMountRoot, "memory", "cgroup.procs")); err != nil {
		t.Skip("needs a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	root := "/minikubelet-unit-" + hex.EncodeToString(b)
	t.Cleanup(func() { removeRealTree(t, root) })
	return root
}

// removeRealTree kills what runs in the cgroup tree at root in every
// hierarchy and removes it, deepest first.
func removeRealTree(t testing.TB, root string) {
	entries, err := os.ReadDir(DefaultMountRoot)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		top := filepath.Join(DefaultMountRoot, e.Name(), root)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			for _, pid := range procsOf(dirs[i]) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			var err error
			for try := 0; try < 50; try++ {
				if err = os.Remove(dirs[i]); err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cleanup: remove %s: %v", dirs[i], err)
			}
		}
	}
}

// TestManagerRealCgroups drives a Manager on the host's real hierarchies,
// below a root of its own: limits land in the kernel's files, Stats reads
// a process in the pod's cgroup, RemovePod refuses while it runs,
// KillPodProcesses kills it, RemovePod then removes the cgroup from every
// hierarchy (the hybrid host's v2 one too), and Cleanup removes a leftover.
func TestManagerRealCgroups(t *testing.T) {
	root := realRoot(t)
	_, ctx := ktesting.NewTestContext(t)
	m, err := New(ctx, Config{Root: root, Driver: DriverCgroupfs, PerQOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Version() != 1 {
		t.Skipf("host drives cgroup v%d; this test is for v1 and hybrid hosts", m.Version())
	}
	g := guaranteedPod("real-g")
	if err := m.EnsurePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	podPath := m.PodCgroupParent(g)
	for file, want := range map[string]string{
		"cpu/cpu.cfs_quota_us":         "50000",
		"cpu/cpu.shares":               "512",
		"memory/memory.limit_in_bytes": "67108864",
	} {
		dir, f := filepath.Split(file)
		if got := readTrim(t, filepath.Join(DefaultMountRoot, dir, podPath, f)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}

	// A process in the pod's cgroup (and, as runc would put it on a hybrid
	// host, in a child cgroup on the v2 hierarchy): a shell moves itself
	// there, then execs sleep, whose memory is then charged to the pod.
	var script string
	for _, h := range m.hierarchies() {
		dir := filepath.Join(h, podPath)
		if filepath.Base(h) == "unified" {
			dir = filepath.Join(dir, "ctr")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(dir); err == nil {
			script += "echo $$ > " + filepath.Join(dir, "cgroup.procs") + " && "
		}
	}
	cmd := exec.Command("sh", "-c", script+"exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	polltest.Until(t, 10*time.Second, "the shell to exec sleep", func() (bool, string) {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		return len(cmdline) >= 5 && string(cmdline[:5]) == "sleep", fmt.Sprintf("cmdline %q (%v)", cmdline, err)
	})
	st, err := m.Stats(podPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pids.Current < 1 || st.Memory.Limit != 64<<20 || st.Memory.Usage == 0 || st.CPU.UsageNanos == 0 {
		t.Errorf("Stats of a pod cgroup running sleep = %+v; want a task, the 64Mi limit, some memory and cpu", st)
	}
	if got := m.Procs(podPath); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Errorf("Procs = %v, want [%d]", got, cmd.Process.Pid)
	}

	if err := m.RemovePod(ctx, g.UID); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Fatalf("RemovePod with a process inside = %v, want ErrFailedPrecondition", err)
	}
	if !m.exists(podPath) {
		t.Fatalf("RemovePod removed a cgroup that holds a process")
	}
	// The runtime knows nothing of the pod any more: its stray process is
	// killed.
	killed, err := m.KillPodProcesses(ctx, g.UID)
	if err != nil || len(killed) != 1 || killed[0] != cmd.Process.Pid {
		t.Fatalf("KillPodProcesses = %v, %v; want [%d]", killed, err, cmd.Process.Pid)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed process did not exit")
	}
	if killed, err := m.KillPodProcesses(ctx, g.UID); err != nil || len(killed) != 0 {
		t.Errorf("KillPodProcesses with nothing left = %v, %v; want nothing", killed, err)
	}
	if err := m.RemovePod(ctx, g.UID); err != nil {
		t.Fatalf("RemovePod once the process is gone: %v", err)
	}
	for _, h := range m.hierarchies() {
		if _, err := os.Stat(filepath.Join(h, podPath)); err == nil {
			t.Errorf("pod cgroup left in %s", h)
		}
	}
	if err := m.RemovePod(ctx, g.UID); err != nil {
		t.Errorf("RemovePod again: %v, want nil (idempotent)", err)
	}

	// Housekeeping removes what no pod owns, and keeps the rest.
	for _, uid := range []string{"left-over", "kept"} {
		if err := m.EnsurePod(ctx, burstablePod(types.UID(uid), "100m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Cleanup(ctx, func(uid types.UID) bool { return uid == "kept" }); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.FindPodCgroup("left-over"); ok {
		t.Errorf("Cleanup left the cgroup of a pod nobody keeps")
	}
	if _, ok := m.FindPodCgroup("kept"); !ok {
		t.Errorf("Cleanup removed the cgroup of a kept pod")
	}
	if got := readTrim(t, filepath.Join(DefaultMountRoot, "cpu", root, "kubepods/burstable/cpu.shares")); got != "102" {
		t.Errorf("burstable cpu.shares after Cleanup = %s, want 102 (the kept pod's 100m)", got)
	}
}

// realPod makes a Manager on the host's real v1 hierarchy (under a root of
// its own, removed with the test) and the pod cgroup of a Guaranteed pod
// named name in it; it skips where realRoot does, and on a v2 host.
func realPod(t *testing.T, name types.UID) (context.Context, *Manager, *v1.Pod) {
	t.Helper()
	root := realRoot(t)
	_, ctx := ktesting.NewTestContext(t)
	m, err := New(ctx, Config{Root: root, Driver: DriverCgroupfs, PerQOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Version() != 1 {
		t.Skip("not a cgroup v1 host")
	}
	g := guaranteedPod(name)
	if err := m.EnsurePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	return ctx, m, g
}
