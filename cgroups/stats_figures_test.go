package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// ReadStats(CPUMemory) reads the cpu usage and the memory figures from
// their three files alone, with the same values Stats gives them; the
// other figures read 0. With Limits, it reads the limits too.
func TestReadStatsCPUMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		files   map[string]string
		limits  map[string]string
		want    Stats
	}{
		{"v1", 1, map[string]string{
			"cpuacct/p/cpuacct.usage":        "123456789\n",
			"memory/p/memory.usage_in_bytes": "20480\n",
			"memory/p/memory.stat":           "cache 1\nrss 2\ntotal_cache 4096\ntotal_rss 8192\ntotal_inactive_file 1024\ntotal_pgfault 70\ntotal_pgmajfault 3\n",
		}, map[string]string{"memory/p/memory.limit_in_bytes": "67108864\n", "pids/p/pids.max": "100\n"}, Stats{
			CPU:    CPUStats{UsageNanos: 123456789},
			Memory: MemoryStats{Usage: 20480, WorkingSet: 19456, RSS: 8192, Cache: 4096, PageFaults: 70, MajorPageFaults: 3},
		}},
		{"v2", 2, map[string]string{
			"p/cpu.stat":       "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\nthrottled_usec 7\n",
			"p/memory.current": "200\n",
			"p/memory.stat":    "anon 100\nfile 50\ninactive_file 20\npgfault 7\npgmajfault 1\n",
		}, map[string]string{"p/memory.max": "67108864\n", "p/pids.max": "100\n"}, Stats{
			// cpu.stat holds the rest of the cpu figures: they come along.
			CPU:    CPUStats{UsageNanos: 1000000, UserNanos: 600000, SystemNanos: 400000, Periods: 5, ThrottledPeriods: 1, ThrottledNanos: 7000},
			Memory: MemoryStats{Usage: 200, WorkingSet: 180, RSS: 100, Cache: 50, PageFaults: 7, MajorPageFaults: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mountRoot := t.TempDir()
			writeFiles(t, mountRoot, tc.files)
			m := &Manager{cfg: Config{MountRoot: mountRoot}, version: tc.version}
			got, err := m.ReadStats("/p", CPUMemory)
			if err != nil {
				t.Fatalf("ReadStats(CPUMemory) with only its files: %v", err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("ReadStats(CPUMemory) =\n%+v\nwant\n%+v", *got, tc.want)
			}
			if _, err := m.ReadStats("/gone", CPUMemory); !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("ReadStats of a missing cgroup: %v, want ErrNotFound", err)
			}
			writeFiles(t, mountRoot, tc.limits)
			got, err = m.ReadStats("/p", CPUMemory|LimitFigures)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Memory.Limit, want.Pids.Limit = 64<<20, 100
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("ReadStats(CPUMemory|LimitFigures) =\n%+v\nwant\n%+v", *got, want)
			}
		})
	}
}

// Procs finds the processes of a cgroup and of every cgroup below it, at
// any depth, on a tree whose directories' link counts do not say how many
// subdirectories they have (a temporary directory's filesystem) as well
// as on one whose do.
func TestProcsNested(t *testing.T) {
	mountRoot := t.TempDir()
	writeFiles(t, mountRoot, map[string]string{
		"pids/pod/cgroup.procs":                  "",
		"pids/pod/sandbox/cgroup.procs":          "10\n",
		"pids/pod/ctr/cgroup.procs":              "20\n21\n",
		"pids/pod/ctr/cgroup.clone_children":     "0\n",
		"pids/pod/ctr/inner/cgroup.procs":        "30\n",
		"pids/pod/ctr/inner/deeper/cgroup.procs": "40\n",
		"pids/other/cgroup.procs":                "99\n",
	})
	m := &Manager{cfg: Config{MountRoot: mountRoot}, version: 1}
	got := m.Procs("/pod")
	slices.Sort(got)
	if want := []int{10, 20, 21, 30, 40}; !slices.Equal(got, want) {
		t.Errorf("Procs(/pod) = %v, want %v", got, want)
	}
	files := m.NewStatsFiles()
	defer files.Close()
	for _, w := range []struct {
		name string
		walk func(p string, known []string, each func(pid int) bool)
	}{{"Manager", m.WalkProcs}, {"StatsFiles", files.WalkProcs}} {
		// Told of the cgroups below it, the walk finds the same; told of
		// some, or of one that is not there, it lists the pod's directory
		// and still counts each process once. Twice: StatsFiles' second
		// walk is through the directories it kept open.
		for range 2 {
			for _, known := range [][]string{
				nil,
				{"/pod/sandbox", "/pod/ctr"},
				{"/pod/sandbox"},
				{"/pod/sandbox", "/pod/gone"},
				{"/pod/sandbox", "/pod/ctr/inner"},
				{"/pod/sandbox", "/pod/sandbox"},
			} {
				var pids []int
				w.walk("/pod", known, func(pid int) bool { pids = append(pids, pid); return true })
				slices.Sort(pids)
				if !slices.Equal(pids, got) {
					t.Errorf("%s.WalkProcs(/pod, %v) = %v, want %v", w.name, known, pids, got)
				}
			}
		}
		// WalkProcs stops when asked: the first PID is the pod's own, else
		// one of the first child listed.
		var walked []int
		w.walk("/pod", nil, func(pid int) bool {
			walked = append(walked, pid)
			return false
		})
		if len(walked) != 1 || !slices.Contains(got, walked[0]) {
			t.Errorf("%s.WalkProcs stopped after the first PID saw %v", w.name, walked)
		}
		var gone []int
		w.walk("/gone", nil, func(pid int) bool { gone = append(gone, pid); return true })
		if len(gone) != 0 {
			t.Errorf("%s.WalkProcs of a missing cgroup = %v, want none", w.name, gone)
		}
	}
	if n := files.Dirs(); n != 3 {
		t.Errorf("StatsFiles holds %d directories after its walks, want 3 (/pod, its sandbox and ctr; ctr/inner is listed)", n)
	}
	files.Retain(func(string) bool { return false })
	if n := files.Dirs(); n != 0 {
		t.Errorf("StatsFiles holds %d directories after Retain kept none", n)
	}
}

// CountProcs counts what WalkProcs lists from the pids.current files,
// walking only the cgroups of more than one task, and cannot tell when
// the tasks of the cgroups it is told of do not add up to the pod's, when
// it is not told of the cgroups below the pod, or when a pids.current is
// missing.
func TestCountProcs(t *testing.T) {
	mountRoot := t.TempDir()
	procs := map[string]string{
		"pids/pod/cgroup.procs":                  "",
		"pids/pod/sandbox/cgroup.procs":          "10\n",
		"pids/pod/ctr/cgroup.procs":              "20\n21\n",
		"pids/pod/ctr/inner/cgroup.procs":        "30\n",
		"pids/pod/ctr/inner/deeper/cgroup.procs": "40\n",
		"pids/pod/one/cgroup.procs":              "50\n",
	}
	writeFiles(t, mountRoot, procs)
	// ctr's processes have threads: 7 tasks for its 4 processes.
	writeFiles(t, mountRoot, map[string]string{
		"pids/pod/pids.current":         "9\n",
		"pids/pod/sandbox/pids.current": "1\n",
		"pids/pod/ctr/pids.current":     "7\n",
		"pids/pod/one/pids.current":     "1\n",
	})
	m := &Manager{cfg: Config{MountRoot: mountRoot}, version: 1}
	files := m.NewStatsFiles()
	defer files.Close()
	known := []string{"/pod/sandbox", "/pod/ctr", "/pod/one"}
	for range 2 { // the second through the files kept open
		if n, ok := files.CountProcs("/pod", known); n != 6 || !ok {
			t.Errorf("CountProcs(/pod, %v) = %d, %v; want the 6 processes WalkProcs lists", known, n, ok)
		}
	}
	if n := files.Len(); n != 4 {
		t.Errorf("%d files open after counting, want the 4 pids.current", n)
	}
	for _, k := range [][]string{nil, {"/pod/sandbox", "/pod/ctr"}, {"/pod/sandbox", "/pod/ctr/inner", "/pod/one"}, {"/pod/sandbox", "/pod/ctr", "/pod/gone"}} {
		if n, ok := files.CountProcs("/pod", k); ok {
			t.Errorf("CountProcs(/pod, %v) = %d, true; want it unable to tell", k, n)
		}
	}
	// A process in the pod's own cgroup: the tasks below do not add up.
	writeFiles(t, mountRoot, map[string]string{"pids/pod/cgroup.procs": "60\n", "pids/pod/pids.current": "10\n"})
	if n, ok := files.CountProcs("/pod", known); ok {
		t.Errorf("with a task in the pod's own cgroup CountProcs = %d, true; want it unable to tell", n)
	}
	// No task at all: none, read from the pod's file alone.
	writeFiles(t, mountRoot, map[string]string{"pids/pod/pids.current": "0\n"})
	if n, ok := files.CountProcs("/pod", known); n != 0 || !ok {
		t.Errorf("with no task CountProcs = %d, %v; want 0, true", n, ok)
	}
	// Without pids.current (cgroup v2 without the pids controller).
	if err := os.Remove(filepath.Join(mountRoot, "pids/pod/sandbox/pids.current")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, mountRoot, map[string]string{"pids/pod/pids.current": "9\n"})
	files.Close()
	if n, ok := files.CountProcs("/pod", known); ok {
		t.Errorf("without the sandbox's pids.current CountProcs = %d, true; want it unable to tell", n)
	}
}

// Procs on the host's real hierarchy: processes in a pod cgroup, in a
// container cgroup below it and in one nested in the container's.
func TestProcsReal(t *testing.T) {
	_, m, g := realPod(t, "procs-real")
	podPath := m.PodCgroupParent(g)
	var want []int
	for _, sub := range []string{"", "ctr", "ctr/nested"} {
		want = append(want, startIn(t, podPath, sub))
	}
	got := m.Procs(podPath)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Procs(%s) = %v, want %v", podPath, got, want)
	}
	// Told of its one child, the walk does not list the pod's cgroup.
	var known []int
	m.WalkProcs(podPath, []string{podPath + "/ctr"}, func(pid int) bool { known = append(known, pid); return true })
	slices.Sort(known)
	if !slices.Equal(known, want) {
		t.Errorf("WalkProcs(%s, its child) = %v, want %v", podPath, known, want)
	}
}

// StatsFiles.WalkProcs on the host's real hierarchy finds what Procs
// finds, through the directories it keeps open, and after the pod's
// cgroup is removed and made again at the same path, the processes of
// the new one.
func TestProcsRealThroughFiles(t *testing.T) {
	ctx, m, g := realPod(t, "procs-files")
	podPath := m.PodCgroupParent(g)
	files := m.NewStatsFiles()
	defer files.Close()
	start := func(sub string) int { t.Helper(); return startIn(t, podPath, sub) }
	walk := func(known []string) []int {
		var pids []int
		files.WalkProcs(podPath, known, func(pid int) bool { pids = append(pids, pid); return true })
		slices.Sort(pids)
		return pids
	}
	want := []int{start("ctr")}
	for range 2 {
		if got := walk([]string{podPath + "/ctr"}); !slices.Equal(got, want) {
			t.Errorf("StatsFiles.WalkProcs(%s, its child) = %v, want %v", podPath, got, want)
		}
	}
	want = append(want, start("ctr/nested"))
	slices.Sort(want)
	if got := walk([]string{podPath + "/ctr"}); !slices.Equal(got, want) {
		t.Errorf("with a nested cgroup, StatsFiles.WalkProcs(%s, its child) = %v, want %v", podPath, got, want)
	}
	// Emptied and removed, then made again with one process of its own.
	for _, pid := range want {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	polltest.Until(t, 10*time.Second, "the pod's processes to die", func() (bool, string) {
		got := m.Procs(podPath)
		return len(got) == 0, fmt.Sprint(got)
	})
	for _, sub := range []string{"ctr/nested", "ctr"} {
		if err := os.Remove(filepath.Join(DefaultMountRoot, "pids", podPath, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.RemovePod(ctx, g.UID); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	pid := start("")
	if got := walk(nil); !slices.Equal(got, []int{pid}) {
		t.Errorf("StatsFiles.WalkProcs of the cgroup made again = %v, want [%d]", got, pid)
	}
	// Removed for good: nothing.
	_ = syscall.Kill(pid, syscall.SIGKILL)
	polltest.Until(t, 10*time.Second, "the pod's process to die", func() (bool, string) {
		got := m.Procs(podPath)
		return len(got) == 0, fmt.Sprint(got)
	})
	if err := m.RemovePod(ctx, g.UID); err != nil {
		t.Fatal(err)
	}
	if got := walk(nil); len(got) != 0 {
		t.Errorf("StatsFiles.WalkProcs of the removed cgroup = %v, want none", got)
	}
	// The walk closed the pod's directory; ctr's, not walked since, is
	// closed by Retain.
	files.Retain(func(c string) bool { return c == podPath })
	if n := files.Dirs(); n != 0 {
		t.Errorf("StatsFiles holds %d directories after the cgroup's removal, want 0", n)
	}
}

// CountProcs on the host's real hierarchy counts the processes of a
// pod's cgroups, one process in its sandbox's cgroup and then two in its
// container's, which it walks; with a process in the pod's own cgroup,
// or in a cgroup it is not told of, it cannot tell.
func TestCountProcsReal(t *testing.T) {
	_, m, g := realPod(t, "count-real")
	podPath := m.PodCgroupParent(g)
	files := m.NewStatsFiles()
	defer files.Close()
	known := []string{podPath + "/sandbox", podPath + "/ctr"}
	for _, sub := range []string{"sandbox", "ctr"} {
		if err := os.MkdirAll(filepath.Join(DefaultMountRoot, "pids", podPath, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	count := func(known []string) (int, bool) {
		// Until the cgroup's task count has caught up with processes
		// that exited (pids.current counts a task until it is reaped).
		var n int
		var ok bool
		polltest.Until(t, 10*time.Second, "CountProcs to agree with the walk", func() (bool, string) {
			var walked int
			files.WalkProcs(podPath, known, func(int) bool { walked++; return true })
			n, ok = files.CountProcs(podPath, known)
			return !ok || n == walked, fmt.Sprintf("counted %d (%v), walked %d", n, ok, walked)
		})
		return n, ok
	}
	if n, ok := count(known); n != 0 || !ok {
		t.Errorf("CountProcs of an empty pod = %d, %v; want 0, true", n, ok)
	}
	startIn(t, podPath, "sandbox")
	startIn(t, podPath, "ctr")
	if n, ok := count(known); n != 2 || !ok {
		t.Errorf("CountProcs with one process in each of two cgroups = %d, %v; want 2, true", n, ok)
	}
	startIn(t, podPath, "ctr")
	if n, ok := count(known); n != 3 || !ok {
		t.Errorf("CountProcs with two processes in the container's = %d, %v; want 3, true", n, ok)
	}
	if n, ok := count(known[:1]); ok {
		t.Errorf("CountProcs told of the sandbox alone = %d, true; want it unable to tell", n)
	}
	startIn(t, podPath, "")
	if n, ok := count(known); ok {
		t.Errorf("CountProcs with a process in the pod's own cgroup = %d, true; want it unable to tell", n)
	}
}

// startIn starts a shell that moves itself into the cgroup sub below
// podPath on the pids hierarchy (made if need be) and execs a sleep; it
// returns its PID once the cgroup lists it, and kills it at the test's
// end.
func startIn(t *testing.T, podPath, sub string) int {
	t.Helper()
	dir := filepath.Join(DefaultMountRoot, "pids", podPath, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo $$ > "+filepath.Join(dir, "cgroup.procs")+" && exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	pid := cmd.Process.Pid
	polltest.Until(t, 10*time.Second, "the shell to join its cgroup", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		return slices.Contains(procsOfBytes(b), pid), fmt.Sprintf("%q %v", b, err)
	})
	return pid
}

func procsOfBytes(b []byte) []int {
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
