package cgroups

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/minikubelet/minikubelet/internal/polltest"
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

// ReadStatsAfter takes from prev the figures that move only while the
// cgroup's tasks run when its CPU usage reads as in prev, the v1 CFS
// counters too once it has been idle for cfsSettled, and reads the rest
// (memory, v2's io.stat) from the files; with the usage moved, 0, or no
// prev, it reads every file.
func TestStatsFilesAfter(t *testing.T) {
	prev := &Stats{
		CPU:    CPUStats{UsageNanos: 1_000_000, UserNanos: 1, SystemNanos: 2, Periods: 3, ThrottledPeriods: 4, ThrottledNanos: 5},
		Memory: MemoryStats{OOMKills: 9},
		Pids:   PidsStats{Current: 7},
		IO:     []IOStats{{Major: 8, ReadBytes: 5}},
	}
	for _, c := range []struct {
		version int
		path    string
		files   func(usage string) map[string]string
		// fromFiles is what the files say of the figures prev can give,
		// and always the figures always read.
		fromFiles Stats
	}{
		{1, "/c", func(usage string) map[string]string {
			return map[string]string{
				"cpuacct/c/cpuacct.usage":                           usage + "\n",
				"cpuacct/c/cpuacct.stat":                            "user 10\nsystem 5\n",
				"cpu/c/cpu.stat":                                    "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n",
				"memory/c/memory.usage_in_bytes":                    "20480\n",
				"memory/c/memory.stat":                              "total_rss 8192\n",
				"memory/c/memory.oom_control":                       "oom_kill 1\n",
				"pids/c/pids.current":                               "3\n",
				"blkio/c/blkio.throttle.io_service_bytes_recursive": "254:0 Read 4096\nTotal 4096\n",
				"blkio/c/blkio.throttle.io_serviced_recursive":      "254:0 Read 1\nTotal 1\n",
			}
		}, Stats{
			CPU:    CPUStats{UserNanos: 10e7, SystemNanos: 5e7, Periods: 10, ThrottledPeriods: 2, ThrottledNanos: 3000},
			Memory: MemoryStats{Usage: 20480, WorkingSet: 20480, RSS: 8192, OOMKills: 1},
			Pids:   PidsStats{Current: 3},
			IO:     []IOStats{{Major: 254, ReadBytes: 4096, ReadOps: 1}},
		}},
		{2, "/c", func(usage string) map[string]string {
			usec, _ := strconv.Atoi(usage)
			return map[string]string{
				"c/cpu.stat":       fmt.Sprintf("usage_usec %d\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\nthrottled_usec 7\n", usec/1000),
				"c/memory.current": "200\n",
				"c/memory.stat":    "anon 100\n",
				"c/memory.events":  "oom_kill 2\n",
				"c/pids.current":   "4\n",
				"c/io.stat":        "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2\n",
			}
		}, Stats{
			CPU:    CPUStats{UserNanos: 600e3, SystemNanos: 400e3, Periods: 5, ThrottledPeriods: 1, ThrottledNanos: 7e3},
			Memory: MemoryStats{Usage: 200, WorkingSet: 200, RSS: 100, OOMKills: 2},
			Pids:   PidsStats{Current: 4},
			IO:     []IOStats{{Major: 254, ReadBytes: 4096, WriteBytes: 8192, ReadOps: 1, WriteOps: 2}},
		}},
	} {
		for _, s := range []struct {
			name    string
			usage   string
			prev    *Earlier
			reused  bool
			settled bool // the CFS counters from prev (v1)
		}{
			{"usage as in prev", "1000000", &Earlier{Stats: prev, IdleFor: time.Second}, true, false},
			{"usage as in prev for long", "1000000", &Earlier{Stats: prev, IdleFor: cfsSettled}, true, true},
			{"usage moved", "2000000", &Earlier{Stats: prev, IdleFor: time.Minute}, false, false},
			{"no prev", "1000000", nil, false, false},
			{"usage 0", "0", &Earlier{Stats: &Stats{}, IdleFor: time.Minute}, false, false},
		} {
			t.Run(fmt.Sprintf("v%d/%s", c.version, s.name), func(t *testing.T) {
				mountRoot := t.TempDir()
				if c.version == 1 {
					mountRoot, _ = fakeV1(t)
				}
				writeFiles(t, mountRoot, c.files(s.usage))
				m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: c.version})
				if err != nil {
					t.Fatal(err)
				}
				f := m.NewStatsFiles()
				defer f.Close()
				got, reused, err := f.ReadStatsAfter(c.path, CPUMemory|Detail, s.prev)
				if err != nil {
					t.Fatal(err)
				}
				want := c.fromFiles
				want.CPU.UsageNanos, _ = strconv.ParseUint(s.usage, 10, 64)
				if s.reused {
					want.Memory.OOMKills, want.Pids.Current = prev.Memory.OOMKills, prev.Pids.Current
					if c.version == 1 { // v2's come with the usage, and io.stat is read
						want.CPU.UserNanos, want.CPU.SystemNanos = prev.CPU.UserNanos, prev.CPU.SystemNanos
						want.IO = prev.IO
						if s.settled {
							want.CPU.Periods, want.CPU.ThrottledPeriods, want.CPU.ThrottledNanos = prev.CPU.Periods, prev.CPU.ThrottledPeriods, prev.CPU.ThrottledNanos
						}
					}
				}
				if reused != s.reused || !reflect.DeepEqual(*got, want) {
					t.Errorf("= %+v, reused %v; want %+v, reused %v", *got, reused, want, s.reused)
				}
			})
		}
	}
}

// On the host's real hierarchy, a cgroup whose process sleeps reads the
// same through ReadStatsAfter, from its last read, as afresh from every
// file; once the process runs, every file is read again.
func TestStatsFilesAfterReal(t *testing.T) {
	_, m, g := realPod(t, "after-real")
	podPath := m.PodCgroupParent(g)
	dir := filepath.Join(DefaultMountRoot, "cpuacct", podPath)
	// Without a quota the CFS counters stay 0, and the reads below can be
	// compared whole (with one, the period timer ticks on for a while
	// after the shell ran).
	if err := os.WriteFile(filepath.Join(DefaultMountRoot, "cpu", podPath, "cpu.cfs_quota_us"), []byte("-1"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A shell in the pod's cgroup (cpuacct, memory, pids) that runs a loop
	// each time a line comes on its input.
	cmd := exec.Command("sh", "-c", `for h in cpuacct memory pids; do echo $$ > `+DefaultMountRoot+`/$h`+podPath+`/cgroup.procs; done; echo joined; while read l; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; echo done; done`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "joined" {
		t.Fatalf("the shell did not join the pod's cgroup (%s): %q", dir, lines.Text())
	}
	// "joined" comes before the shell blocks in read: until it sleeps there,
	// its usage still grows, and the read after would rightly be fresh.
	usage := filepath.Join(dir, "cpuacct.usage")
	stat := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"
	last, _ := os.ReadFile(usage)
	polltest.Until(t, 10*time.Second, "the shell to sleep in read", func() (bool, string) {
		st, err := os.ReadFile(stat)
		now, uerr := os.ReadFile(usage)
		settled := err == nil && uerr == nil && procState(st) == 'S' && string(now) == string(last)
		last = now
		return settled, fmt.Sprintf("state %q, usage %q (%v, %v)", procState(st), now, err, uerr)
	})
	f := m.NewStatsFiles()
	defer f.Close()
	first, reused, err := f.ReadStatsAfter(podPath, AllFigures, nil)
	if err != nil || reused || first.Pids.Current != 1 {
		t.Fatalf("first read = %+v, reused %v, %v; want the shell counted, nothing reused", first, reused, err)
	}
	got, reused, err := f.ReadStatsAfter(podPath, AllFigures, &Earlier{Stats: first, IdleFor: cfsSettled})
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.ReadStats(podPath, AllFigures)
	if err != nil {
		t.Fatal(err)
	}
	if !reused || !reflect.DeepEqual(got, want) {
		t.Errorf("with the shell asleep: %+v, reused %v; afresh %+v", got, reused, want)
	}
	if _, err := io.WriteString(in, "run\n"); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || lines.Text() != "done" {
		t.Fatalf("the shell did not run its loop: %q", lines.Text())
	}
	if got, reused, err := f.ReadStatsAfter(podPath, AllFigures, &Earlier{Stats: first, IdleFor: cfsSettled}); err != nil || reused || got.CPU.UsageNanos <= first.CPU.UsageNanos {
		t.Errorf("after the shell ran: %+v, reused %v, %v; want every file read, the usage grown from %d", got, reused, err, first.CPU.UsageNanos)
	}
}

// procState is the state letter of a /proc/PID/stat line (after the
// command's closing parenthesis), or 0.
func procState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}
