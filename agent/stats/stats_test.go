package stats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cgroups"
)

// fakeCgroups serves stats set per path; a path without stats is gone.
type fakeCgroups struct {
	mu    sync.Mutex
	stats map[string]*cgroups.Stats
	procs map[string][]int
	fail  map[string]error
	reads int
	// figures counts the reads by the figures asked for; procs counts
	// Procs calls and specReads CPUSpec calls.
	figures   map[cgroups.Figures]int
	procCalls int
	walked    []string
	specReads int
	specs     map[string]cgroups.CPUSpec
}

func (f *fakeCgroups) CPUSpec(path string) (cgroups.CPUSpec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specReads++
	s, ok := f.specs[path]
	if !ok {
		return s, fmt.Errorf("cgroup %s: %w", path, errdefs.ErrNotFound)
	}
	return s, nil
}

// ReadStats serves the stats set for path; the figures fig does not
// select read 0, as the real reader leaves them.
func (f *fakeCgroups) ReadStats(path string, fig cgroups.Figures) (*cgroups.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.figures == nil {
		f.figures = map[cgroups.Figures]int{}
	}
	f.figures[fig]++
	if err := f.fail[path]; err != nil {
		return nil, err
	}
	s, ok := f.stats[path]
	if !ok {
		return nil, fmt.Errorf("cgroup %s: %w", path, errdefs.ErrNotFound)
	}
	cp := *s
	if fig&cgroups.LimitFigures == 0 {
		cp.Memory.Limit, cp.Pids.Limit = 0, 0
	}
	if fig&cgroups.Detail == 0 {
		cp.CPU = cgroups.CPUStats{UsageNanos: s.CPU.UsageNanos}
		cp.Memory.OOMKills, cp.Pids.Current, cp.IO = 0, 0, nil
	}
	return &cp, nil
}

func (f *fakeCgroups) WalkProcs(path string, _ []string, each func(pid int) bool) {
	f.mu.Lock()
	f.procCalls++
	f.walked = append(f.walked, path)
	procs := f.procs[path]
	f.mu.Unlock()
	for _, pid := range procs {
		if !each(pid) {
			return
		}
	}
}

func (f *fakeCgroups) DeviceName(major, minor uint64) string {
	if major == 254 && minor == 0 {
		return "/dev/vda"
	}
	return ""
}

func (f *fakeCgroups) setCPU(path string, usage uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats[path].CPU.UsageNanos = usage
}

type fakePods []Pod

func (f fakePods) StatsPods() []Pod { return f }

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     120       2    0    0    0     0          0         0      120       2    0    0    0     0       0          0
  eth0:    5000      40    1    2    0     0          0         0     3000      30    3    4    0     0       0          0
`

func writeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{
		"stat":                   "cpu  1 2 3\nbtime 1700000000\n",
		"net/dev":                strings.Replace(netDev, "eth0", "ens3", 1),
		"4242/net/dev":           netDev,
		"loadavg":                "0.50 0.40 0.30 3/412 9999\n",
		"sys/kernel/pid_max":     "32768\n",
		"sys/kernel/threads-max": "15000\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func testProvider(t *testing.T) (*Provider, *fakeCgroups, *clocktesting.FakeClock) {
	t.Helper()
	cg := &fakeCgroups{
		stats: map[string]*cgroups.Stats{
			"/":                      {CPU: cgroups.CPUStats{UsageNanos: 9e9}, Memory: cgroups.MemoryStats{Usage: 3 << 30, WorkingSet: 2 << 30}},
			"/kubepods":              {CPU: cgroups.CPUStats{UsageNanos: 5e9}, Memory: cgroups.MemoryStats{WorkingSet: 1 << 30}},
			"/kubepods/podu":         {CPU: cgroups.CPUStats{UsageNanos: 4e9}, Memory: cgroups.MemoryStats{Usage: 300, WorkingSet: 200, RSS: 100, Limit: 1000, PageFaults: 9}, Pids: cgroups.PidsStats{Current: 3}},
			"/kubepods/podu/cid":     {CPU: cgroups.CPUStats{UsageNanos: 3e9, Periods: 10, ThrottledPeriods: 1}, Memory: cgroups.MemoryStats{Usage: 250, WorkingSet: 150, RSS: 90, Limit: 1000, OOMKills: 1}, IO: []cgroups.IOStats{{Major: 254, WriteBytes: 20971520, WriteOps: 40}, {Major: 7, Minor: 3, ReadBytes: 10}}},
			"/kubepods/podu/sandbox": {},
		},
		procs: map[string][]int{"/kubepods/podu": {999999, 4242}},
		specs: map[string]cgroups.CPUSpec{
			"/":                  {Shares: 1024, PeriodMicros: 100000},
			"/kubepods":          {Shares: 2048, PeriodMicros: 100000},
			"/kubepods/podu":     {Shares: 512, QuotaMicros: 50000, PeriodMicros: 100000},
			"/kubepods/podu/cid": {Shares: 256, QuotaMicros: 25000, PeriodMicros: 100000},
		},
	}
	clk := clocktesting.NewFakeClock(time.Unix(1700001000, 0))
	p := New(Config{
		NodeName: "node-a",
		Pods: fakePods{{
			Name: "p", Namespace: "ns", UID: "u", StartTime: time.Unix(1700000500, 0), Cgroup: "/kubepods/podu",
			Containers: []Container{
				{Name: "c", ID: "cid", Image: "busybox", StartTime: time.Unix(1700000600, 0), Cgroup: "/kubepods/podu/cid"},
				{Name: "gone", ID: "gid", Image: "busybox", Cgroup: "/kubepods/podu/gid"},
			},
		}},
		Cgroups:       cg,
		Clock:         clk,
		PodsCgroup:    "/kubepods",
		ProcRoot:      writeProc(t),
		MachineCores:  2,
		MachineMemory: 4 << 30,
	})
	return p, cg, clk
}

func TestSummary(t *testing.T) {
	p, cg, clk := testProvider(t)
	ctx := context.Background()
	first := p.Summary(ctx, false)
	if first.Pods[0].CPU.UsageNanoCores != nil {
		t.Errorf("a first read has a CPU rate: %d", *first.Pods[0].CPU.UsageNanoCores)
	}
	// Two seconds later the container used one more CPU second: half a core.
	clk.SetTime(clk.Now().Add(2 * time.Second))
	cg.setCPU("/kubepods/podu/cid", 4e9)
	cg.setCPU("/kubepods/podu", 5e9)
	s := p.Summary(ctx, false)

	if s.Node.NodeName != "node-a" || !s.Node.StartTime.Time.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("node = %q started %v", s.Node.NodeName, s.Node.StartTime)
	}
	if got := *s.Node.Memory.AvailableBytes; got != 2<<30 {
		t.Errorf("node available memory = %d, want capacity - working set = 2Gi", got)
	}
	if s.Node.Network == nil || s.Node.Network.Name != "ens3" || *s.Node.Network.RxBytes != 5000 {
		t.Errorf("node network = %+v, want ens3 (no eth0 on the node) with 5000 bytes received", s.Node.Network)
	}
	if len(s.Node.SystemContainers) != 1 || s.Node.SystemContainers[0].Name != "pods" || *s.Node.SystemContainers[0].CPU.UsageCoreNanoSeconds != 5e9 {
		t.Errorf("system containers = %+v, want pods", s.Node.SystemContainers)
	}
	if len(s.Pods) != 1 {
		t.Fatalf("pods = %d, want 1", len(s.Pods))
	}
	pod := s.Pods[0]
	if pod.PodRef != (statsapi.PodReference{Name: "p", Namespace: "ns", UID: "u"}) {
		t.Errorf("podRef = %+v", pod.PodRef)
	}
	if got := *pod.CPU.UsageNanoCores; got != 5e8 {
		t.Errorf("pod nanocores = %d, want 5e8", got)
	}
	if *pod.Memory.WorkingSetBytes != 200 || *pod.Memory.AvailableBytes != 800 || *pod.Memory.PageFaults != 9 {
		t.Errorf("pod memory = %+v", pod.Memory)
	}
	if pod.Network == nil || pod.Network.Name != "eth0" || *pod.Network.RxBytes != 5000 || *pod.Network.TxBytes != 3000 || len(pod.Network.Interfaces) != 1 {
		t.Errorf("pod network = %+v, want eth0 only (lo left out), read through the first live process", pod.Network)
	}
	if *pod.ProcessStats.ProcessCount != 2 {
		t.Errorf("process count = %d, want 2", *pod.ProcessStats.ProcessCount)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "c" {
		t.Fatalf("containers = %+v, want c only (gid's cgroup is gone)", pod.Containers)
	}
	c := pod.Containers[0]
	if *c.CPU.UsageCoreNanoSeconds != 4e9 || *c.CPU.UsageNanoCores != 5e8 || *c.Memory.RSSBytes != 90 || *c.Memory.AvailableBytes != 850 {
		t.Errorf("container = cpu %+v memory %+v", c.CPU, c.Memory)
	}

	// What pid.available is computed from: the smaller task limit, and
	// every task.
	if r := s.Node.Rlimit; r == nil || *r.MaxPID != 15000 || *r.NumOfRunningProcesses != 412 {
		t.Errorf("rlimit = %+v, want maxpid 15000 (threads-max) and 412 tasks", r)
	}

	only := p.Summary(ctx, true)
	if only.Pods[0].Network != nil || only.Pods[0].ProcessStats != nil || only.Node.Network != nil || only.Node.Rlimit != nil {
		t.Errorf("only_cpu_and_memory kept network, process or rlimit figures")
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"usageNanoCores":500000000`) {
		t.Errorf("JSON = %s, %v", b, err)
	}
}

func TestSnapshotMaxAge(t *testing.T) {
	p, cg, clk := testProvider(t)
	ctx := context.Background()
	p.Summary(ctx, false)
	reads := cg.reads
	clk.SetTime(clk.Now().Add(500 * time.Millisecond))
	p.Summary(ctx, false)
	if cg.reads != reads {
		t.Errorf("a request within MaxAge read the cgroups again (%d reads, then %d)", reads, cg.reads)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	p.Summary(ctx, false)
	if cg.reads == reads {
		t.Errorf("a request after MaxAge did not read the cgroups again")
	}
}

func scrape(t *testing.T, p *Provider) string {
	t.Helper()
	return get(t, p.CadvisorHandler())
}

func get(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// series writes one sample as the text format does: labels sorted by name.
func series(name, value string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return name + "{" + strings.Join(pairs, ",") + "} " + value
}

// with returns base plus more labels.
func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestCadvisorMetrics(t *testing.T) {
	p, _, _ := testProvider(t)
	body := scrape(t, p)
	ctr := map[string]string{"container": "c", "id": "/kubepods/podu/cid", "image": "busybox", "name": "cid", "namespace": "ns", "pod": "p"}
	pod := map[string]string{"container": "", "id": "/kubepods/podu", "image": "", "name": "", "namespace": "ns", "pod": "p"}
	root := map[string]string{"container": "", "id": "/", "image": "", "name": "", "namespace": "", "pod": ""}
	for _, want := range []string{
		series("container_cpu_usage_seconds_total", "3", with(ctr, "cpu", "total")),
		series("container_cpu_usage_seconds_total", "4", with(pod, "cpu", "total")),
		series("container_cpu_usage_seconds_total", "9", with(root, "cpu", "total")),
		series("container_cpu_cfs_throttled_periods_total", "1", ctr),
		series("container_memory_working_set_bytes", "150", ctr),
		series("container_memory_rss", "90", ctr),
		series("container_memory_usage_bytes", "300", pod),
		series("container_spec_memory_limit_bytes", "1000", ctr),
		series("container_spec_cpu_shares", "256", ctr),
		series("container_spec_cpu_quota", "25000", ctr),
		series("container_spec_cpu_period", "100000", ctr),
		series("container_spec_cpu_shares", "512", pod),
		series("container_spec_cpu_shares", "1024", root),
		series("container_spec_cpu_period", "100000", root),
		series("container_oom_events_total", "1", ctr),
		series("container_fs_writes_bytes_total", "2.097152e+07", with(ctr, "device", "/dev/vda")),
		series("container_fs_writes_total", "40", with(ctr, "device", "/dev/vda")),
		series("container_fs_reads_bytes_total", "10", with(ctr, "device", "7:3")),
		series("container_network_receive_bytes_total", "5000", with(pod, "interface", "eth0")),
		series("container_network_transmit_bytes_total", "3000", with(pod, "interface", "eth0")),
		series("container_memory_failures_total", "9", with(pod, "failure_type", "pgfault", "scope", "hierarchy")),
		series("container_threads", "3", pod),
		"machine_cpu_cores 2",
		"container_scrape_error 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	for _, unwanted := range []string{`interface="lo"`, `name="gid"`, series("container_cpu_cfs_periods_total", "0", pod),
		// No quota on the root; no filesystem without a runtime.
		`container_spec_cpu_quota{container="",id="/"`, "container_fs_usage_bytes"} {
		if strings.Contains(body, unwanted) {
			t.Errorf("unexpected %s", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("body:\n%s", body)
	}
}

// The label pairs kept between scrapes follow a cgroup whose pod or
// container changed, and those of cgroups gone are dropped.
func TestCadvisorLabelsKept(t *testing.T) {
	p, _, clk := testProvider(t)
	scrape(t, p)
	pods := p.cfg.Pods.(fakePods)
	pods[0].Name, pods[0].Containers[0].Image = "renamed", "busybox:2"
	clk.SetTime(clk.Now().Add(time.Second))
	body := scrape(t, p)
	want := series("container_memory_rss", "90", map[string]string{"container": "c", "id": "/kubepods/podu/cid", "image": "busybox:2", "name": "cid", "namespace": "ns", "pod": "renamed"})
	if !strings.Contains(body, want) || strings.Contains(body, `pod="p"`) {
		t.Errorf("after the pod's rename, want %s and no pod=\"p\":\n%s", want, body)
	}
	p.cfg.Pods = fakePods{}
	clk.SetTime(clk.Now().Add(time.Second))
	scrape(t, p)
	if n := len(p.labels.rows); n != 2 {
		t.Errorf("%d rows' labels kept with no pod, want the node's and the pods' cgroups'", n)
	}
}

func TestScrapeError(t *testing.T) {
	p, cg, _ := testProvider(t)
	cg.fail = map[string]error{"/kubepods/podu/cid": errors.New("permission denied")}
	body := scrape(t, p)
	if !strings.Contains(body, "container_scrape_error 1") {
		t.Errorf("a failed read does not set container_scrape_error")
	}
	if strings.Contains(body, `name="cid"`) {
		t.Errorf("a container whose read failed has series")
	}
}

func TestReadNetDevMalformed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dev")
	if err := os.WriteFile(p, []byte("h\nh\n  eth0: 1 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseNetDev(p, b); err == nil {
		t.Errorf("a short line parsed")
	}
}

// /metrics/resource has what metrics-server reads, each sample stamped
// with the time of the snapshot (milliseconds), and the start times.
func TestResourceMetrics(t *testing.T) {
	p, _, _ := testProvider(t)
	body := get(t, p.ResourceHandler())
	const at = " 1700001000000" // the fake clock
	for _, want := range []string{
		"# TYPE node_cpu_usage_seconds_total counter",
		"node_cpu_usage_seconds_total 9" + at,
		"node_memory_working_set_bytes 2.147483648e+09" + at,
		`container_cpu_usage_seconds_total{container="c",namespace="ns",pod="p"} 3` + at,
		`container_memory_working_set_bytes{container="c",namespace="ns",pod="p"} 150` + at,
		`container_start_time_seconds{container="c",namespace="ns",pod="p"} 1.7000006e+09` + "\n",
		`pod_cpu_usage_seconds_total{namespace="ns",pod="p"} 4` + at,
		`pod_memory_working_set_bytes{namespace="ns",pod="p"} 200` + at,
		"scrape_error 0",
		"resource_scrape_error 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(body, `container="gone"`) {
		t.Errorf("a container whose cgroup is gone has series")
	}
	if t.Failed() {
		t.Logf("body:\n%s", body)
	}

	p, cg, _ := testProvider(t)
	cg.fail = map[string]error{"/kubepods/podu/cid": errors.New("permission denied")}
	if body := get(t, p.ResourceHandler()); !strings.Contains(body, "resource_scrape_error 1") {
		t.Errorf("a failed read does not set resource_scrape_error:\n%s", body)
	}
}
