package volumes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"golang.org/x/sys/unix"
)

// setUpBusyPod sets up a pod with every kind of mount the package makes: a
// tmpfs emptyDir, a disk emptyDir, a downwardAPI tmpfs, and subPath bind
// mounts of a disk emptyDir and of a hostPath directory whose files must
// survive the teardown. It returns the pod's directory.
func setUpBusyPod(t *testing.T, m *Manager, uid, hostDir string) string {
	t.Helper()
	ctx := testCtx(t)
	mem := emptyDirVolume("mem", v1.StorageMediumMemory)
	mem.EmptyDir.SizeLimit = ptr.To(resource.MustParse("8Mi"))
	pod := testPod(uid, []v1.Volume{
		mem,
		emptyDirVolume("disk", ""),
		downwardVolume("info"),
		hostPathVolume("host", hostDir, v1.HostPathDirectory),
	})
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	c := &v1.Container{Name: "main", VolumeMounts: []v1.VolumeMount{
		{Name: "disk", MountPath: "/d", SubPath: "sub"},
		{Name: "host", MountPath: "/h", SubPath: "keep"},
		{Name: "mem", MountPath: "/m"},
	}}
	if _, err := pv.Mounts(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mem", "disk"} {
		dir, _ := pv.HostPath(name)
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return m.PodDir(types.UID(uid))
}

// hostFiles makes a host directory with a subdirectory and a file the
// teardown must leave alone.
func hostFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep", "precious"), []byte("host data"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkHostFiles(t *testing.T, dir string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "keep", "precious")); err != nil || string(b) != "host data" {
		t.Errorf("host file after teardown: %q, %v; the teardown went through a mount", b, err)
	}
}

func TestTearDownPod(t *testing.T) {
	requireRoot(t)
	hostDir := hostFiles(t)
	m := newTestManager(t, Config{})
	podDir := setUpBusyPod(t, m, "uid-td", hostDir)
	if got := mountsUnder(t, podDir); len(got) != 4 {
		t.Fatalf("mounts under the pod: %q, want 4 (two tmpfs, two subPath binds)", got)
	}
	ctx := testCtx(t)
	if err := m.TearDownPod(ctx, "uid-td"); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(t, podDir); len(got) != 0 {
		t.Errorf("mounts left: %q", got)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod directory left (%v)", err)
	}
	checkHostFiles(t, hostDir)
	// Idempotent.
	if err := m.TearDownPod(ctx, "uid-td"); err != nil {
		t.Errorf("second TearDownPod: %v", err)
	}
}

// Stacked mounts and a busy mount are unmounted too.
func TestTearDownStubbornMounts(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, Config{})
	ctx := testCtx(t)
	pod := testPod("uid-stack", []v1.Volume{emptyDirVolume("mem", v1.StorageMediumMemory)})
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := pv.HostPath("mem")
	// A second tmpfs on the same point, and a file held open in it.
	if err := ensureTmpfsForce(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, _ := mountsAt(t, dir); n != 2 {
		t.Fatalf("%d mounts at %s, want 2", n, dir)
	}
	if err := m.TearDownPod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(t, m.PodDir(pod.UID)); len(got) != 0 {
		t.Errorf("mounts left: %q", got)
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Errorf("pod directory left (%v)", err)
	}
}

func TestCleanupOrphans(t *testing.T) {
	requireRoot(t)
	hostDir := hostFiles(t)
	m := newTestManager(t, Config{})
	ctx := testCtx(t)
	// An orphan a crashed agent left, with mounts: set up, then forgotten.
	orphanDir := setUpBusyPod(t, m, "uid-orphan", hostDir)
	m.mu.Lock()
	delete(m.active, "uid-orphan")
	m.mu.Unlock()
	// A pod the agent keeps, one it has set up (and so never cleans
	// while set up), and a bare directory of a gone pod.
	keptDir := setUpBusyPod(t, m, "uid-kept", hostDir)
	activeDir := setUpBusyPod(t, m, "uid-active", hostDir)
	bareDir := m.PodDir("uid-bare")
	if err := os.MkdirAll(filepath.Join(bareDir, "containers", "main"), 0o750); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var asked []types.UID
	keep := func(uid types.UID) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, uid)
		return uid == "uid-kept"
	}
	if err := m.CleanupOrphans(ctx, keep); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{orphanDir, bareDir} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s not removed (%v)", dir, err)
		}
		if got := mountsUnder(t, dir); len(got) != 0 {
			t.Errorf("mounts left under %s: %q", dir, got)
		}
	}
	for _, dir := range []string{keptDir, activeDir} {
		if got := mountsUnder(t, dir); len(got) != 4 {
			t.Errorf("%s: mounts %q, want its 4 untouched", dir, got)
		}
	}
	checkHostFiles(t, hostDir)
	slices.Sort(asked)
	if want := []types.UID{"uid-active", "uid-bare", "uid-kept", "uid-orphan"}; !slices.Equal(asked, want) {
		t.Errorf("keep asked for %q, want %q", asked, want)
	}

	// Once torn down by its worker, a pod is no longer protected: a
	// directory made again for it (by a late writer) is cleaned. A pod
	// set up and not torn down is never cleaned.
	if err := m.TearDownPod(ctx, "uid-active"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(activeDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := m.CleanupOrphans(ctx, func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(filepath.Join(m.cfg.RootDir, "pods"))
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"uid-kept"}) {
		t.Errorf("left: %q, want only the pod still set up", left)
	}
}

func TestCleanupOrphansWithoutPodsDir(t *testing.T) {
	m := newTestManager(t, Config{})
	if err := m.CleanupOrphans(context.Background(), func(types.UID) bool { return false }); err != nil {
		t.Errorf("CleanupOrphans with no pods dir: %v", err)
	}
}

func TestParseMountPoints(t *testing.T) {
	table := strings.Join([]string{
		`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw`,
		`100 22 0:50 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/with\040space rw,relatime shared:60 - tmpfs tmpfs rw,size=65536k`,
		`101 22 0:51 / /tmp/back\134slash\011tab rw - tmpfs tmpfs rw`,
	}, "\n")
	got, err := parseMountPoints(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/", "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/with space", "/tmp/back\\slash\ttab"}
	if !slices.Equal(got, want) {
		t.Errorf("mount points = %q, want %q", got, want)
	}
	if _, err := parseMountPoints(strings.NewReader("short line")); err == nil {
		t.Error("a malformed line was accepted")
	}
}

// ensureTmpfsForce mounts one more tmpfs on dir.
func ensureTmpfsForce(dir string) error {
	return unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m")
}
