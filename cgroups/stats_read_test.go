package cgroups

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// libraryStats reads the cgroup at path as Stats did before stats_read.go,
// through containerd/cgroups, to check the readers against.
func libraryStats(t *testing.T, m *Manager, path string) *Stats {
	t.Helper()
	var s Stats
	if m.version == 1 {
		_, stat := v1Subsystems(m.cfg.MountRoot)
		cg, err := cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return stat, nil }))
		if err != nil {
			t.Fatalf("library: load %s: %v", path, err)
		}
		met, err := cg.Stat(cgroup1.IgnoreNotExist)
		if err != nil {
			t.Fatalf("library: stat %s: %v", path, err)
		}
		u, th := met.GetCPU().GetUsage(), met.GetCPU().GetThrottling()
		s.CPU = CPUStats{UsageNanos: u.GetTotal(), UserNanos: u.GetUser(), SystemNanos: u.GetKernel(),
			Periods: th.GetPeriods(), ThrottledPeriods: th.GetThrottledPeriods(), ThrottledNanos: th.GetThrottledTime()}
		mem := met.GetMemory()
		s.Memory = MemoryStats{Usage: mem.GetUsage().GetUsage(), WorkingSet: workingSet(mem.GetUsage().GetUsage(), mem.GetTotalInactiveFile()),
			RSS: mem.GetTotalRSS(), Cache: mem.GetTotalCache(), PageFaults: mem.GetTotalPgFault(), MajorPageFaults: mem.GetTotalPgMajFault(),
			Limit: limitOrZero(mem.GetUsage().GetLimit()), OOMKills: met.GetMemoryOomControl().GetOomKill()}
		s.Pids = PidsStats{Current: met.GetPids().GetCurrent(), Limit: limitOrZero(met.GetPids().GetLimit())}
		r := newReader()
		r.mountRoot, r.cgroup = m.cfg.MountRoot, path
		defer r.release()
		io, err := readBlkioV1(r)
		if err == nil {
			s.IO = io
		}
		return &s
	}
	cg, err := cgroup2.Load(path, cgroup2.WithMountpoint(m.cfg.MountRoot))
	if err != nil {
		t.Fatalf("library: load %s: %v", path, err)
	}
	met, err := cg.StatFiltered(cgroup2.StatPids | cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatIO)
	if err != nil {
		t.Fatalf("library: stat %s: %v", path, err)
	}
	c := met.GetCPU()
	s.CPU = CPUStats{UsageNanos: c.GetUsageUsec() * 1000, UserNanos: c.GetUserUsec() * 1000, SystemNanos: c.GetSystemUsec() * 1000,
		Periods: c.GetNrPeriods(), ThrottledPeriods: c.GetNrThrottled(), ThrottledNanos: c.GetThrottledUsec() * 1000}
	mem := met.GetMemory()
	s.Memory = MemoryStats{Usage: mem.GetUsage(), WorkingSet: workingSet(mem.GetUsage(), mem.GetInactiveFile()), RSS: mem.GetAnon(),
		Cache: mem.GetFile(), PageFaults: mem.GetPgfault(), MajorPageFaults: mem.GetPgmajfault(), Limit: limitOrZero(mem.GetUsageLimit()),
		OOMKills: met.GetMemoryEvents().GetOomKill()}
	s.Pids = PidsStats{Current: met.GetPids().GetCurrent(), Limit: limitOrZero(met.GetPids().GetLimit())}
	for _, e := range met.GetIo().GetUsage() {
		var d *IOStats
		s.IO, d = ioStatsOf(s.IO, e.GetMajor(), e.GetMinor())
		*d = IOStats{Major: e.GetMajor(), Minor: e.GetMinor(),
			ReadBytes: e.GetRbytes(), WriteBytes: e.GetWbytes(), ReadOps: e.GetRios(), WriteOps: e.GetWios()}
	}
	return &s
}

// The readers give what containerd/cgroups gives from the same files: on
// fake v1 and v2 trees with every figure set, and on an idle pod cgroup of
// this host's real hierarchies (whose figures do not move between reads).
func TestStatsMatchLibrary(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		mountRoot, sysRoot := fakeV1(t)
		const p = "/kubepods/podu/ctr"
		writeFiles(t, mountRoot, map[string]string{
			"cpu" + p + "/cpu.stat":                 "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n",
			"cpuacct" + p + "/cpuacct.usage":        "123456789\n",
			"cpuacct" + p + "/cpuacct.stat":         "user 10\nsystem 5\n",
			"cpuacct" + p + "/cpuacct.usage_percpu": "100 200\n",
			"memory" + p + "/memory.stat":           "cache 1\nrss 2\ntotal_cache 4096\ntotal_rss 8192\ntotal_inactive_file 1024\ntotal_pgfault 70\ntotal_pgmajfault 3\n",
			"memory" + p + "/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
			"memory" + p + "/memory.usage_in_bytes": "20480\n",
			"memory" + p + "/memory.limit_in_bytes": "67108864\n",
			// The library reads these too, and stops at the first missing.
			"memory" + p + "/memory.max_usage_in_bytes":                "30000\n",
			"memory" + p + "/memory.failcnt":                           "0\n",
			"pids" + p + "/pids.current":                               "3\n",
			"pids" + p + "/pids.max":                                   "1024\n",
			"blkio" + p + "/blkio.throttle.io_service_bytes_recursive": "254:0 Read 4096\n254:0 Write 512\nTotal 4608\n",
			"blkio" + p + "/blkio.throttle.io_serviced_recursive":      "254:0 Read 1\n254:0 Write 2\nTotal 3\n",
		})
		m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: sysRoot, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		compare(t, m, p)
	})
	t.Run("v2", func(t *testing.T) {
		mountRoot := t.TempDir()
		const p = "/kubepods/podu/ctr"
		writeFiles(t, mountRoot, map[string]string{
			p + "/cgroup.controllers": "cpu memory pids io\n",
			p + "/cpu.stat":           "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\nthrottled_usec 7\n",
			p + "/memory.stat":        "anon 100\nfile 50\ninactive_file 20\npgfault 7\npgmajfault 1\n",
			p + "/memory.current":     "200\n",
			p + "/memory.max":         "1048576\n",
			p + "/memory.events":      "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n",
			p + "/pids.current":       "4\n",
			p + "/pids.max":           "max\n",
			p + "/io.stat":            "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n7:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n",
		})
		m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: 2})
		if err != nil {
			t.Fatal(err)
		}
		compare(t, m, p)
	})
	t.Run("real", func(t *testing.T) {
		_, m, g := realPod(t, "match-lib")
		compareLive(t, m, m.PodCgroupParent(g))
	})
}

// compareLive is compare for a real cgroup, whose counters can move
// between the two reads (a CFS period of a new cgroup with a quota ended
// between them, nr_periods 0 then 1, in a CI run of 2026-12-07): the
// reads are made again, a few times, until both see the same instant.
func compareLive(t *testing.T, m *Manager, path string) {
	t.Helper()
	var got, want *Stats
	for try := 0; try < 5; try++ {
		var err error
		if got, err = m.Stats(path); err != nil {
			t.Fatal(err)
		}
		if want = libraryStats(t, m, path); reflect.DeepEqual(got, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("Stats(%s) =\n%+v\ncontainerd/cgroups reads\n%+v", path, got, want)
}

func compare(t *testing.T, m *Manager, path string) {
	t.Helper()
	got, err := m.Stats(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := libraryStats(t, m, path); !reflect.DeepEqual(got, want) {
		t.Errorf("Stats(%s) =\n%+v\ncontainerd/cgroups reads\n%+v", path, got, want)
	}
}

// A file that is not what its name says is an error naming the file.
func TestStatsBadFile(t *testing.T) {
	mountRoot := t.TempDir()
	const p = "/kubepods/podu"
	writeFiles(t, mountRoot, map[string]string{
		p + "/cpu.stat":       "usage_usec 1000\n",
		p + "/memory.current": "lots\n",
	})
	m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Stats(p)
	if err == nil || !strings.Contains(err.Error(), "memory.current") {
		t.Errorf("Stats with a bad memory.current: %v, want an error naming the file", err)
	}
}
