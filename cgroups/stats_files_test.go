package cgroups

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/containerd/errdefs"
)

// StatsFiles reads what ReadStats reads, sees a file's new content at
// the next read, and Retain closes the files of the cgroups not kept.
func TestStatsFiles(t *testing.T) {
	mountRoot, sysRoot := fakeV1(t)
	files := map[string]string{}
	for _, p := range []string{"/a", "/b"} {
		for name, content := range map[string]string{
			"cpu" + p + "/cpu.stat":                                    "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n",
			"cpuacct" + p + "/cpuacct.usage":                           "123456789\n",
			"cpuacct" + p + "/cpuacct.stat":                            "user 10\nsystem 5\n",
			"memory" + p + "/memory.stat":                              "total_cache 4096\ntotal_rss 8192\ntotal_inactive_file 1024\ntotal_pgfault 70\ntotal_pgmajfault 3\n",
			"memory" + p + "/memory.oom_control":                       "oom_kill 1\n",
			"memory" + p + "/memory.usage_in_bytes":                    "20480\n",
			"memory" + p + "/memory.limit_in_bytes":                    "67108864\n",
			"pids" + p + "/pids.current":                               "3\n",
			"pids" + p + "/pids.max":                                   "max\n",
			"blkio" + p + "/blkio.throttle.io_service_bytes_recursive": "254:0 Read 4096\n254:0 Write 512\nTotal 4608\n",
			"blkio" + p + "/blkio.throttle.io_serviced_recursive":      "254:0 Read 1\n254:0 Write 2\nTotal 3\n",
		} {
			files[name] = content
		}
	}
	writeFiles(t, mountRoot, files)
	m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: sysRoot, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := m.NewStatsFiles()
	defer f.Close()
	for _, fig := range []Figures{CPUMemory, AllFigures} {
		got, err := f.ReadStats("/a", fig)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.ReadStats("/a", fig)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("StatsFiles.ReadStats(%d) =\n%+v\nReadStats reads\n%+v", fig, got, want)
		}
	}
	if f.Len() != 11 {
		t.Errorf("%d files open after reading every figure of a cgroup, want 11", f.Len())
	}
	writeFiles(t, mountRoot, map[string]string{"cpuacct/a/cpuacct.usage": "987654321\n"})
	if got, err := f.ReadStats("/a", CPUMemory); err != nil || got.CPU.UsageNanos != 987654321 {
		t.Errorf("a read after the file changed = %+v, %v; want the new usage", got, err)
	}
	if _, err := f.ReadStats("/gone", CPUMemory); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a cgroup that does not exist: %v, want ErrNotFound", err)
	}
	if _, err := f.ReadStats("/b", CPUMemory); err != nil {
		t.Fatal(err)
	}
	f.Retain(func(cgroup string) bool { return cgroup == "/b" })
	if f.Len() != 3 {
		t.Errorf("%d files open after Retain(/b), want the 3 of /b", f.Len())
	}
	// A cgroup with no disk in its bytes file: the operations file is
	// not read (the kernel lists the same disks in both).
	writeFiles(t, mountRoot, map[string]string{
		"blkio/b/blkio.throttle.io_service_bytes_recursive": "Total 0\n",
		"blkio/b/blkio.throttle.io_serviced_recursive":      "254:0 Read 1\nTotal 1\n",
	})
	if got, err := f.ReadStats("/b", AllFigures); err != nil || got.IO != nil {
		t.Errorf("with no disk listed: %+v, %v; want no I/O", got, err)
	}
	if f.Len() != 10 {
		t.Errorf("%d files open after every figure of /b with no disk, want 10", f.Len())
	}
}

// On cgroup v2 too, StatsFiles reads what ReadStats reads.
func TestStatsFilesV2(t *testing.T) {
	mountRoot := t.TempDir()
	const p = "/kubepods/podu/ctr"
	writeFiles(t, mountRoot, map[string]string{
		p + "/cpu.stat":       "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\nthrottled_usec 7\n",
		p + "/memory.stat":    "anon 100\nfile 50\ninactive_file 20\npgfault 7\npgmajfault 1\n",
		p + "/memory.current": "200\n",
		p + "/memory.max":     "max\n",
		p + "/memory.events":  "oom_kill 2\n",
		p + "/pids.current":   "4\n",
		p + "/pids.max":       "100\n",
		p + "/io.stat":        "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n",
	})
	m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := m.NewStatsFiles()
	defer f.Close()
	for _, fig := range []Figures{CPUMemory, CPUMemory | LimitFigures, AllFigures, AllFigures} {
		got, err := f.ReadStats(p, fig)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.ReadStats(p, fig)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("StatsFiles.ReadStats(%d) =\n%+v\nReadStats reads\n%+v", fig, got, want)
		}
	}
	if f.Len() != 8 {
		t.Errorf("%d files open after reading every figure of a v2 cgroup, want 8", f.Len())
	}
}

// On the host's real hierarchy a removed cgroup reads ErrNotFound through
// its open files, and one made again at the same path reads its own
// figures.
func TestStatsFilesReal(t *testing.T) {
	ctx, m, g := realPod(t, "files-real")
	podPath := m.PodCgroupParent(g)
	f := m.NewStatsFiles()
	defer f.Close()
	compareFiles := func() {
		t.Helper()
		got, err := f.ReadStats(podPath, AllFigures)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.ReadStats(podPath, AllFigures)
		if err != nil {
			t.Fatal(err)
		}
		// An empty cgroup's figures do not move between the two reads.
		if !reflect.DeepEqual(got, want) {
			t.Errorf("through open files\n%+v\nafresh\n%+v", got, want)
		}
	}
	compareFiles()
	compareFiles() // the second read is through the open files
	for range 2 {
		got, err := f.CPUSpec(podPath)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := m.CPUSpec(podPath); err != nil || got != want || got.QuotaMicros != 50000 {
			t.Errorf("CPUSpec through open files = %+v, afresh %+v, %v; want the 50 ms quota", got, want, err)
		}
	}
	if err := m.RemovePod(ctx, g.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadStats(podPath, AllFigures); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a removed cgroup read through its open files: %v, want ErrNotFound", err)
	}
	if _, err := f.CPUSpec(podPath); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("the cpu spec of a removed cgroup through its open files: %v, want ErrNotFound", err)
	}
	if err := m.EnsurePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(DefaultMountRoot, "memory", podPath, "memory.limit_in_bytes"), []byte("33554432"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := f.ReadStats(podPath, CPUMemory|LimitFigures)
	if err != nil || got.Memory.Limit != 32<<20 {
		t.Errorf("the cgroup made again reads %+v, %v; want its 32 MiB limit", got, err)
	}
	compareFiles()
}
