package scale

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The apiserver's counters: the nodes' requests are the sum over the flow
// schemas of system:nodes, and apiserver_request_total is summed by verb
// and resource over its other labels.
func TestParseCounters(t *testing.T) {
	body := []byte(`# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-node-high",priority_level="node-high"} 30
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-nodes",priority_level="system"} 12
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kube-scheduler",priority_level="workload-high"} 500
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 40
apiserver_request_total{code="409",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 7
`)
	c, err := parseCounters(body, []string{"system-node-high", "system-nodes"})
	if err != nil {
		t.Fatal(err)
	}
	if c.nodes != 42 {
		t.Errorf("nodes = %v, want 42", c.nodes)
	}
	if c.byVerb["PUT leases"] != 42 || c.byVerb["PATCH pods/status"] != 7 || len(c.byVerb) != 2 {
		t.Errorf("byVerb = %v", c.byVerb)
	}
	a := counters{at: time.Unix(0, 0), nodes: 12, byVerb: map[string]float64{"PUT leases": 2}}
	c.at = time.Unix(120, 0)
	nodes, byVerb := rates(a, c)
	if nodes != 15 || byVerb["PUT leases"] != 20 || byVerb["PATCH pods/status"] != 3.5 {
		t.Errorf("rates = %v %v", nodes, byVerb)
	}
	if _, err := parseCounters([]byte("garbage{"), nil); err == nil {
		t.Error("parsed garbage")
	}
}

// Percentiles round to the nearest rank; the spread of one value is that
// value.
func TestLatencyAndSpread(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	l := latency(d)
	if l.N != 100 || l.Median != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 {
		t.Errorf("latency = %+v", l)
	}
	if latency(nil) != nil {
		t.Error("latency of nothing is not nil")
	}
	if s := spread([]float64{3, 1, 2}); s != (Spread{Median: 2, Mean: 2, Max: 3}) {
		t.Errorf("spread = %+v", s)
	}
}

// The tracker measures each pod from its own start, never below zero,
// and only pods that got there.
func TestTrackerLatencies(t *testing.T) {
	tr := newTracker()
	t0 := time.Now()
	tr.mark(tr.created, "a", t0)
	tr.mark(tr.created, "b", t0.Add(time.Second))
	tr.mark(tr.created, "c", t0)
	tr.mark(tr.running, "a", t0.Add(2*time.Second))
	tr.mark(tr.running, "a", t0.Add(5*time.Second)) // the first one counts
	tr.mark(tr.running, "b", t0)                    // a clock step: 0
	got := tr.latencies(tr.created, tr.running)
	if len(got) != 2 {
		t.Fatalf("latencies = %v", got)
	}
	for _, d := range got {
		if d != 2*time.Second && d != 0 {
			t.Errorf("latency %v", d)
		}
	}
}

// A report with both agents compares them; one whose phases stopped early
// still writes, and says why.
func TestReportWrites(t *testing.T) {
	mem := func(rss, anon, pss float64) *Memory {
		return &Memory{RSS: Spread{Median: rss, Max: rss}, Anon: Spread{Median: anon}, PSS: Spread{Median: pss}, TotalPSSMiB: 100 * pss}
	}
	mk := &Phase{Kind: "minikubelet", Loaded: &Window{Agent: mem(30, 10, 12), Runtime: mem(15, 4, 5), NodeRequestsPerNodeMinute: 6, APIServerCPUPercent: 3},
		PodStart: &Latency{Median: 500, P99: 900}, RequestsPerPodWithoutEvents: 3}
	km := &Phase{Kind: "kubemark", Loaded: &Window{Agent: mem(90, 20, 24), NodeRequestsPerNodeMinute: 6, APIServerCPUPercent: 3},
		PodStart: &Latency{Median: 1000, P99: 1800}, RequestsPerPodWithoutEvents: 6}
	q := ratios(mk, km)
	if q == nil || q.AgentRSS != 30.0/90 || q.AgentAnon != 0.5 || q.WithRuntimeRSS != 0.5 || q.NodeRequests != 1 || q.NodeRequestsPerPod != 0.5 || q.PodStartP50 != 0.5 {
		t.Errorf("ratios = %+v", q)
	}
	r := &Report{Nodes: 100, Pods: 1000, Agents: []*Phase{mk, km, {Kind: "kubemark", Error: "boom"}}, Ratios: q}
	var b bytes.Buffer
	r.WriteText(&b)
	for _, want := range []string{"minikubelet", "30.0 / 30.0 MiB", "500 / 900 ms", "kubemark stopped early: boom", "agent RSS 0.33x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil || len(back.Agents) != 3 || back.Ratios == nil {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

// /proc readers: this process's memory and CPU time.
func TestProcReaders(t *testing.T) {
	m, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.rss <= 0 || m.anon <= 0 || m.pss <= 0 || m.anon > m.rss {
		t.Errorf("memory = %+v", m)
	}
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Error(err)
	}
	if _, err := kbFields("/proc/meminfo", "NoSuchField:"); err == nil {
		t.Error("kbFields found a field that is not there")
	}
}
