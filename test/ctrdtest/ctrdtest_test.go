package ctrdtest_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// testTimeout bounds one runtime's whole scenario.
const testTimeout = 3 * time.Minute

// TestBed proves the bed on every runtime in bed.json: a private containerd
// runs a host-network pod and a CNI pod with a busybox container each, and
// afterwards neither Stop nor Cleanup (after a simulated crash) leaves a
// mount, process, netns, bridge or cgroup behind; a containerd restarted
// with Restart keeps its containers running and runs new ones.
func TestBed(t *testing.T) {
	bed := loadBed(t)
	for _, rt := range bed.Runtimes {
		t.Run(rt.Name, func(t *testing.T) {
			t.Parallel() // concurrent daemons must not collide
			t.Run("stop", func(t *testing.T) { testStop(t, bed, rt) })
			t.Run("cleanup-after-crash", func(t *testing.T) { testCleanupAfterCrash(t, bed, rt) })
			t.Run("restart", func(t *testing.T) { testRestart(t, bed, rt) })
		})
	}
}

// TestStartFailureLeavesNothing checks that a daemon that dies at start
// makes Start fail fast and roll back its instance dir and slot.
func TestStartFailureLeavesNothing(t *testing.T) {
	bed := loadBed(t)
	rt := bed.Runtimes[0]
	rt.Name, rt.Containerd = "broken", "/bin/false"
	base := t.TempDir()
	slots := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rt, Bed: bed, BaseDir: base, SlotDir: slots})
	if err == nil {
		_ = c.Stop(ctx)
		t.Fatal("Start with /bin/false as containerd succeeded")
	}
	t.Logf("Start failed as expected: %.200v", err)
	if left := listDir(t, base); len(left) > 0 {
		t.Errorf("base dir not empty after failed Start: %v", left)
	}
	if left := listDir(t, slots); !slices.Equal(left, []string{".lock"}) {
		t.Errorf("slot reservations left after failed Start: %v", left)
	}
}

func loadBed(t *testing.T) *ctrdtest.Bed {
	t.Helper()
	path := os.Getenv("MINIKUBELET_BED")
	if path == "" {
		t.Skip("MINIKUBELET_BED is not set: run test/scripts/prepare.sh as root, then " +
			"MINIKUBELET_BED=/var/cache/minikubelet/bed.json go test ./test/ctrdtest/")
	}
	if os.Geteuid() != 0 {
		t.Skip("the bed runs containerd: run as root")
	}
	bed, err := ctrdtest.LoadBed(path)
	if err != nil {
		t.Fatal(err)
	}
	return bed
}

// testStop runs both pods, then checks Stop removes everything.
func testStop(t *testing.T, bed *ctrdtest.Bed, rt ctrdtest.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	netnsBefore := listDir(t, "/run/netns")
	c := start(ctx, t, bed, rt)
	runPod(ctx, t, c, bed, "host", true)
	runPod(ctx, t, c, bed, "cni", false)
	gone := snapshot(t, c)
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, gone, netnsBefore)
}

// testCleanupAfterCrash kills containerd with a pod running, as if the
// test process had died, and checks Cleanup alone removes everything.
func testCleanupAfterCrash(t *testing.T, bed *ctrdtest.Bed, rt ctrdtest.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	netnsBefore := listDir(t, "/run/netns")
	c := start(ctx, t, bed, rt)
	runPod(ctx, t, c, bed, "crash", false)
	gone := snapshot(t, c)
	if err := unix.Kill(c.PID(), unix.SIGKILL); err != nil {
		t.Fatalf("kill containerd %d: %v", c.PID(), err)
	}
	if err := ctrdtest.Cleanup(c.Dir()); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	assertGone(t, gone, netnsBefore)
}

// testRestart restarts containerd under a running pod: the container runs
// on (same process), CRI answers again through the same clients, and a new
// pod runs; Stop then leaves nothing behind.
func testRestart(t *testing.T, bed *ctrdtest.Bed, rt ctrdtest.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	netnsBefore := listDir(t, "/run/netns")
	c := start(ctx, t, bed, rt)
	id := runPod(ctx, t, c, bed, "before", false)
	pid, err := c.ContainerPID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	daemon := c.PID()
	t0 := time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	t.Logf("%s restarted in %v (pid %d -> %d)", rt.Name, time.Since(t0).Round(time.Millisecond), daemon, c.PID())
	st, err := c.Runtime().ContainerStatus(ctx, id, false)
	if err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container %s after the restart: %v, %v", id, st.GetStatus().GetState(), err)
	}
	if after, err := c.ContainerPID(ctx, id); err != nil || after != pid {
		t.Errorf("container process after the restart: %d (%v), was %d", after, err, pid)
	}
	runPod(ctx, t, c, bed, "after", true)
	gone := snapshot(t, c)
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, gone, netnsBefore)
}

// start starts rt under a short base dir and registers Stop as a safety net.
func start(ctx context.Context, t *testing.T, bed *ctrdtest.Bed, rt ctrdtest.Runtime) *ctrdtest.Containerd {
	t.Helper()
	base, err := os.MkdirTemp("", "ctrdtest") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	t0 := time.Now()
	c, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rt, Bed: bed, BaseDir: base})
	if err != nil {
		t.Fatalf("Start %s: %v", rt.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop (cleanup): %v", err)
		}
	})
	tm := c.Timings()
	t.Logf("%s: started in %v (containerd ready %v, image import %v), dir %s, bridge %s, subnet %s",
		rt.Name, time.Since(t0).Round(time.Millisecond), tm.Ready.Round(time.Millisecond),
		tm.Import.Round(time.Millisecond), c.Dir(), c.Bridge(), c.Subnet())
	return c
}

// runPod runs a sandbox with a busybox container printing "hi" and checks
// it runs (and, for a CNI pod, got an IP in the instance's subnet); it
// returns the container's ID.
func runPod(ctx context.Context, t *testing.T, c *ctrdtest.Containerd, bed *ctrdtest.Bed, name string, hostNetwork bool) string {
	t.Helper()
	busybox, err := bed.Image(ctrdtest.RoleBusybox)
	if err != nil {
		t.Fatal(err)
	}
	rs := c.Runtime()
	cfg := sandboxConfig(t, c, name, hostNetwork)
	t0 := time.Now()
	podID, err := rs.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	t1 := time.Now()
	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "busybox"},
		Image:    &runtimeapi.ImageSpec{Image: busybox.Ref},
		Command:  []string{"sh", "-c", "echo hi; sleep 3600"},
		LogPath:  "busybox.log",
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
	ctrID, err := rs.CreateContainer(ctx, podID, ctrCfg, cfg)
	if err != nil {
		t.Fatalf("CreateContainer in %s: %v", name, err)
	}
	if err := rs.StartContainer(ctx, ctrID); err != nil {
		t.Fatalf("StartContainer in %s: %v", name, err)
	}
	t.Logf("%s pod %q: RunPodSandbox %v, CreateContainer+StartContainer %v", c.Name(), name,
		t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	polltest.NoError(t, time.Minute, "the container to run and log hi", func() error {
		st, err := rs.ContainerStatus(ctx, ctrID, false)
		if err != nil {
			return err
		}
		if s := st.GetStatus().GetState(); s != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return fmt.Errorf("state %v", s)
		}
		data, _ := os.ReadFile(filepath.Join(cfg.GetLogDirectory(), ctrCfg.GetLogPath()))
		if !strings.Contains(string(data), " hi\n") {
			return fmt.Errorf("log %q", data)
		}
		return nil
	})
	if !hostNetwork {
		checkPodIP(ctx, t, c, podID)
		checkLoopback(ctx, t, c, ctrID)
	}
	return ctrID
}

// checkLoopback checks containerd brought the pod's lo up (it runs the
// loopback plugin itself; the conflist only has the bridge).
func checkLoopback(ctx context.Context, t *testing.T, c *ctrdtest.Containerd, ctrID string) {
	t.Helper()
	stdout, stderr, err := c.Runtime().ExecSync(ctx, ctrID, []string{"ip", "-o", "-4", "addr", "show", "dev", "lo"}, 10*time.Second)
	if err != nil || !strings.Contains(string(stdout), "inet 127.0.0.1/8") {
		t.Fatalf("lo in pod: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
}

// sandboxConfig builds a pod under the instance's cgroup parent.
func sandboxConfig(t *testing.T, c *ctrdtest.Containerd, name string, hostNetwork bool) *runtimeapi.PodSandboxConfig {
	uid := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}
	hostname := name
	if hostNetwork {
		ns.Network, hostname = runtimeapi.NamespaceMode_NODE, "" // runc refuses a hostname without a UTS namespace
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ctrdtest", Uid: uid},
		Hostname:     hostname,
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    c.CgroupParent() + "/pod" + uid,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns},
		},
	}
}

// checkPodIP checks the pod's IP lies in the instance's subnet.
func checkPodIP(ctx context.Context, t *testing.T, c *ctrdtest.Containerd, podID string) {
	t.Helper()
	st, err := c.Runtime().PodSandboxStatus(ctx, podID, false)
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	ip := net.ParseIP(st.GetStatus().GetNetwork().GetIp())
	_, subnet, err := net.ParseCIDR(c.Subnet())
	if err != nil {
		t.Fatal(err)
	}
	if ip == nil || !subnet.Contains(ip) {
		t.Fatalf("pod IP %q not in %s", st.GetStatus().GetNetwork().GetIp(), c.Subnet())
	}
	t.Logf("%s CNI pod IP %s", c.Name(), ip)
}

// leftovers names what must be gone after teardown.
type leftovers struct {
	dir, bridge, network, cgroupParent string
	podPIDs                            []int // every process of the instance's pods
}

// snapshot records what teardown must remove, including the PIDs of all
// pod processes (read from the pods' cgroups), which name neither the
// instance dir nor anything else we could match later.
func snapshot(t *testing.T, c *ctrdtest.Containerd) leftovers {
	t.Helper()
	g := leftovers{dir: c.Dir(), bridge: c.Bridge(), network: c.Network(), cgroupParent: c.CgroupParent()}
	root := filepath.Join("/sys/fs/cgroup/pids", g.cgroupParent)
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					g.podPIDs = append(g.podPIDs, pid)
				}
			}
		}
		return nil
	})
	if len(g.podPIDs) == 0 {
		t.Fatalf("no pod processes found under %s", root)
	}
	return g
}

// assertGone checks, independently of the package's own teardown code,
// that nothing of the instance remains.
func assertGone(t *testing.T, g leftovers, netnsBefore []string) {
	t.Helper()
	if _, err := os.Stat(g.dir); !os.IsNotExist(err) {
		t.Errorf("instance dir %s still exists (stat: %v)", g.dir, err)
	}
	for _, m := range mountPoints(t) {
		if m == g.dir || strings.HasPrefix(m, g.dir+"/") {
			t.Errorf("mount left under instance dir: %s", m)
		}
		if strings.HasPrefix(m, "/sys/fs/cgroup/") && strings.Contains(m, g.cgroupParent) {
			t.Errorf("mount left in cgroup parent: %s", m)
		}
	}
	for _, p := range procsNaming(t, g.dir) {
		t.Errorf("process left naming instance dir: %s", p)
	}
	for _, pid := range g.podPIDs {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("pod process %d still alive: %s", pid, stat)
		}
	}
	if _, err := os.Lstat("/sys/class/net/" + g.bridge); err == nil {
		t.Errorf("bridge %s still exists", g.bridge)
	}
	if after := listDir(t, "/run/netns"); !slices.Equal(after, netnsBefore) {
		t.Errorf("/run/netns changed: before %v, after %v", netnsBefore, after)
	}
	for _, cg := range cgroupMounts(t) {
		if _, err := os.Stat(filepath.Join(cg, g.cgroupParent)); err == nil {
			t.Errorf("cgroup %s still exists", filepath.Join(cg, g.cgroupParent))
		}
	}
	if m, _ := filepath.Glob("/var/lib/cni/results/" + g.network + "-*"); len(m) > 0 {
		t.Errorf("CNI results left: %v", m)
	}
}

// mountPoints and cgroupMounts read /proc/self/mountinfo.
func mountPoints(t *testing.T) []string { return mountinfo(t, func(string) bool { return true }) }

func cgroupMounts(t *testing.T) []string {
	return mountinfo(t, func(fstype string) bool { return fstype == "cgroup" || fstype == "cgroup2" })
}

func mountinfo(t *testing.T, keep func(fstype string) bool) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep > 4 && sep+1 < len(fields) && keep(fields[sep+1]) {
			out = append(out, fields[4])
		}
	}
	return out
}

// procsNaming lists "pid: cmdline" of processes whose cmdline holds s.
func procsNaming(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(data), s) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return out
}

// listDir lists names in dir (nil if it does not exist).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
