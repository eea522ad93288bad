package cgroups

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/containerd/errdefs"
)

func TestStatsV1(t *testing.T) {
	mountRoot, sysRoot := fakeV1(t)
	const p = "/kubepods/podu/ctr"
	writeFiles(t, mountRoot, map[string]string{
		"cpu" + p + "/cpu.stat":                                    "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n",
		"cpuacct" + p + "/cpuacct.usage":                           "123456789\n",
		"cpuacct" + p + "/cpuacct.stat":                            "user 10\nsystem 5\n",
		"cpuacct" + p + "/cpuacct.usage_percpu":                    "100 200\n",
		"memory" + p + "/memory.stat":                              "cache 1\nrss 2\ntotal_cache 4096\ntotal_rss 8192\ntotal_inactive_file 1024\ntotal_pgfault 70\ntotal_pgmajfault 3\n",
		"memory" + p + "/memory.oom_control":                       "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
		"memory" + p + "/memory.usage_in_bytes":                    "20480\n",
		"memory" + p + "/memory.max_usage_in_bytes":                "30000\n",
		"memory" + p + "/memory.failcnt":                           "0\n",
		"memory" + p + "/memory.limit_in_bytes":                    "9223372036854771712\n",
		"pids" + p + "/pids.current":                               "3\n",
		"pids" + p + "/pids.max":                                   "max\n",
		"blkio" + p + "/blkio.throttle.io_service_bytes_recursive": "254:0 Read 4096\n254:0 Write 20971520\n254:0 Sync 20975616\n254:0 Async 0\n254:0 Discard 0\n254:0 Total 20975616\n7:0 Read 0\n7:0 Write 512\n7:0 Total 512\nTotal 20976128\n",
		"blkio" + p + "/blkio.throttle.io_serviced_recursive":      "254:0 Read 1\n254:0 Write 40\n254:0 Total 41\nTotal 41\n",
	})
	m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: sysRoot, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Stats(p)
	if err != nil {
		t.Fatal(err)
	}
	want := &Stats{
		CPU:    CPUStats{UsageNanos: 123456789, UserNanos: 100000000, SystemNanos: 50000000, Periods: 10, ThrottledPeriods: 2, ThrottledNanos: 3000},
		Memory: MemoryStats{Usage: 20480, WorkingSet: 19456, RSS: 8192, Cache: 4096, PageFaults: 70, MajorPageFaults: 3, OOMKills: 1},
		Pids:   PidsStats{Current: 3},
		IO: []IOStats{
			{Major: 7, Minor: 0, WriteBytes: 512},
			{Major: 254, Minor: 0, ReadBytes: 4096, WriteBytes: 20971520, ReadOps: 1, WriteOps: 40},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats =\n%+v\nwant\n%+v", got, want)
	}
	if _, err := m.Stats("/kubepods/podu/gone"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Stats of a missing cgroup: %v, want ErrNotFound", err)
	}
}

func TestStatsV2(t *testing.T) {
	mountRoot := t.TempDir()
	const p = "/kubepods/podu/ctr"
	writeFiles(t, mountRoot, map[string]string{
		p + "/cpu.stat":       "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\nthrottled_usec 7\n",
		p + "/memory.stat":    "anon 100\nfile 50\ninactive_file 20\npgfault 7\npgmajfault 1\n",
		p + "/memory.current": "200\n",
		p + "/memory.max":     "max\n",
		p + "/memory.events":  "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n",
		p + "/pids.current":   "4\n",
		p + "/pids.max":       "100\n",
		p + "/io.stat":        "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n8:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=5 cost.wait=0 cost.indebt=0 cost.indelay=0\n",
	})
	m, err := New(context.Background(), Config{Root: "/", Driver: DriverCgroupfs, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Stats(p)
	if err != nil {
		t.Fatal(err)
	}
	want := &Stats{
		CPU:    CPUStats{UsageNanos: 1000000, UserNanos: 600000, SystemNanos: 400000, Periods: 5, ThrottledPeriods: 1, ThrottledNanos: 7000},
		Memory: MemoryStats{Usage: 200, WorkingSet: 180, RSS: 100, Cache: 50, PageFaults: 7, MajorPageFaults: 1, OOMKills: 2},
		Pids:   PidsStats{Current: 4, Limit: 100},
		IO: []IOStats{
			{Major: 8, Minor: 16, ReadBytes: 1, WriteBytes: 2, ReadOps: 3, WriteOps: 4},
			{Major: 254, Minor: 0, ReadBytes: 4096, WriteBytes: 8192, ReadOps: 1, WriteOps: 2},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats =\n%+v\nwant\n%+v", got, want)
	}
	if _, err := m.Stats("/nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Stats of a missing cgroup: %v, want ErrNotFound", err)
	}
}

func TestDeviceName(t *testing.T) {
	sysRoot := t.TempDir()
	writeFiles(t, sysRoot, map[string]string{"dev/block/254:0/uevent": "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n"})
	m := &Manager{cfg: Config{SysRoot: sysRoot}}
	if got := m.DeviceName(254, 0); got != "/dev/vda" {
		t.Errorf("DeviceName(254, 0) = %q, want /dev/vda", got)
	}
	if got := m.DeviceName(1, 1); got != "" {
		t.Errorf("DeviceName of an unknown device = %q, want empty", got)
	}
}
