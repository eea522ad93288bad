package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is every figure of one run, written as JSON (bin/scale-report.json)
// beside the text.
type Report struct {
	When        time.Time `json:"when"`
	Machine     Machine   `json:"machine"`
	KubeVersion string    `json:"kubeVersion"`
	// Nodes and Pods are the sizes of each phase.
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
	// WindowSeconds is how long each measured window lasted.
	WindowSeconds float64 `json:"windowSeconds"`
	// Baseline is the control plane alone, before any node.
	Baseline *Window `json:"baseline,omitempty"`
	// Agents are the phases, one per agent kind, in the order run.
	Agents []*Phase `json:"agents"`
	// Ratios compare minikubelet with kubemark when both ran.
	Ratios *Ratios `json:"minikubeletToKubemark,omitempty"`
}

// Machine describes the host.
type Machine struct {
	CPUs   int    `json:"cpus"`
	MemMiB int64  `json:"memMiB"`
	Kernel string `json:"kernel"`
}

// Phase is one agent kind's figures.
type Phase struct {
	// Kind is "minikubelet" or "kubemark"; Binary its path and size.
	Kind        string `json:"kind"`
	Binary      string `json:"binary"`
	BinaryBytes int64  `json:"binaryBytes"`
	// ReadySeconds: the nodes' start to all Ready.
	ReadySeconds float64 `json:"readySeconds"`
	// Idle: the nodes with no pod; Loaded: with the pods running.
	Idle   *Window `json:"idle,omitempty"`
	Loaded *Window `json:"loaded,omitempty"`
	// PodStart: create call to Running in the API (the watch), per pod;
	// Running is how many got there; AllRunningSeconds: first create to
	// the last Running.
	PodStart *Latency `json:"podStartMs,omitempty"`
	// PodBoundToRunning: seen bound to a node (spec.nodeName) to Running,
	// per pod: the node's part of PodStart, without the time the pod
	// waited for the scheduler, which the two phases do not share (the
	// pods are created as fast as the apiserver takes them, and the
	// scheduler's queue is longer when they come faster).
	PodBoundToRunning *Latency `json:"podBoundToRunningMs,omitempty"`
	Running           int      `json:"running"`
	AllRunningSeconds float64  `json:"allRunningSeconds"`
	// PodDelete: delete call to gone from the API, per pod; Gone how many.
	PodDelete *Latency `json:"podDeleteMs,omitempty"`
	Gone      int      `json:"gone"`
	// RequestsPerPod: the nodes' requests from the first create to the
	// last pod gone, beyond the idle rate over that time, per pod.
	RequestsPerPod float64 `json:"nodeRequestsPerPodLifecycle"`
	// KubeletEventsPerPod: the event writes (each event's count) of
	// source "kubelet" in the phase's namespace, per pod; kubemark's hollow
	// kubelet records none (it runs with a fake recorder), a kubelet's
	// and minikubelet's record Pulled, Created, Started, Killing, ...
	// RequestsPerPodWithoutEvents is RequestsPerPod less them.
	KubeletEventsPerPod         float64 `json:"kubeletEventsPerPod"`
	RequestsPerPodWithoutEvents float64 `json:"nodeRequestsPerPodLifecycleWithoutEvents"`
	// LifecycleRequestsPerPod: apiserver_request_total by verb and
	// resource, all clients (the harness's creates and deletes, the
	// scheduler's binds, ... which are the same in every phase), from the
	// first create to the last pod gone, per pod.
	LifecycleRequestsPerPod map[string]float64 `json:"apiserverRequestsPerPodLifecycle,omitempty"`
	// Error is what stopped the phase early, if anything.
	Error string `json:"error,omitempty"`
}

// Window is what one measured window saw.
type Window struct {
	Seconds float64 `json:"seconds"`
	// Agent is each node's agent process; Runtime each minikubelet node's
	// fakecri (kubemark's fake runtime is in its agent's process).
	Agent   *Memory `json:"agentMemory,omitempty"`
	Runtime *Memory `json:"runtimeMemory,omitempty"`
	// AgentCPUPercent: the agents' CPU, mean per node, in % of a core.
	AgentCPUPercent   float64 `json:"agentCPUPercentPerNode"`
	RuntimeCPUPercent float64 `json:"runtimeCPUPercentPerNode,omitempty"`
	// NodeRequestsPerNodeMinute: the nodes' requests (the flow schemas of
	// system:nodes) per node and minute; NodeRequestsPerMinute in all.
	NodeRequestsPerNodeMinute float64 `json:"nodeRequestsPerNodePerMinute"`
	NodeRequestsPerMinute     float64 `json:"nodeRequestsPerMinute"`
	// RequestsPerMinute: apiserver_request_total by verb and resource, all
	// clients, per minute.
	RequestsPerMinute map[string]float64 `json:"apiserverRequestsPerMinute"`
	// APIServerCPUPercent and EtcdCPUPercent in % of a core.
	APIServerCPUPercent float64 `json:"apiserverCPUPercent"`
	EtcdCPUPercent      float64 `json:"etcdCPUPercent"`
}

// Memory is one process per node's memory at the end of a window, in MiB
// over the nodes.
type Memory struct {
	RSS  Spread `json:"rssMiB"`
	Anon Spread `json:"anonMiB"`
	PSS  Spread `json:"pssMiB"`
	// TotalPSSMiB sums PSS over the nodes: what they cost the host.
	TotalPSSMiB float64 `json:"totalPssMiB"`
}

// Spread summarises one figure over the nodes.
type Spread struct {
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

// Latency summarises durations, in ms.
type Latency struct {
	N      int     `json:"n"`
	Median float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// Ratios are minikubelet's figures over kubemark's.
type Ratios struct {
	// AgentRSS and AgentPSS: minikubelet's agent alone;
	// WithRuntimeRSS: agent and fakecri together, against kubemark's one
	// process (kubelet and fake runtime), loaded.
	AgentRSS       float64 `json:"agentRSS"`
	AgentAnon      float64 `json:"agentAnon"`
	AgentPSS       float64 `json:"agentPSS"`
	WithRuntimeRSS float64 `json:"agentAndRuntimeRSS"`
	WithRuntimePSS float64 `json:"agentAndRuntimePSS"`
	// NodeRequests: per node per minute, loaded; PerPod per pod
	// lifecycle, events left out (kubemark records none).
	NodeRequests       float64 `json:"nodeRequestsPerNodePerMinute"`
	NodeRequestsPerPod float64 `json:"nodeRequestsPerPodLifecycleWithoutEvents"`
	// PodStartP50 and P99.
	PodStartP50 float64 `json:"podStartP50"`
	PodStartP99 float64 `json:"podStartP99"`
	// BoundToRunningP50 and P99: the node's part alone.
	BoundToRunningP50 float64 `json:"podBoundToRunningP50"`
	BoundToRunningP99 float64 `json:"podBoundToRunningP99"`
	// APIServerCPU, loaded.
	APIServerCPU float64 `json:"apiserverCPU"`
}

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Spread{Median: s[len(s)/2], Mean: sum / float64(len(s)), Max: s[len(s)-1]}
}

func latency(d []time.Duration) *Latency {
	if len(d) == 0 {
		return nil
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p*float64(len(s))+0.5) - 1
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	return &Latency{N: len(s), Median: at(0.5), P90: at(0.9), P99: at(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratios compares minikubelet's phase with kubemark's.
func ratios(mk, km *Phase) *Ratios {
	if mk == nil || km == nil || mk.Loaded == nil || km.Loaded == nil || mk.Loaded.Agent == nil || km.Loaded.Agent == nil {
		return nil
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	a, k := mk.Loaded.Agent, km.Loaded.Agent
	r := &Ratios{
		AgentRSS:           div(a.RSS.Median, k.RSS.Median),
		AgentAnon:          div(a.Anon.Median, k.Anon.Median),
		AgentPSS:           div(a.PSS.Median, k.PSS.Median),
		NodeRequests:       div(mk.Loaded.NodeRequestsPerNodeMinute, km.Loaded.NodeRequestsPerNodeMinute),
		NodeRequestsPerPod: div(mk.RequestsPerPodWithoutEvents, km.RequestsPerPodWithoutEvents),
		APIServerCPU:       div(mk.Loaded.APIServerCPUPercent, km.Loaded.APIServerCPUPercent),
	}
	if rt := mk.Loaded.Runtime; rt != nil {
		r.WithRuntimeRSS = div(a.RSS.Median+rt.RSS.Median, k.RSS.Median)
		r.WithRuntimePSS = div(a.PSS.Median+rt.PSS.Median, k.PSS.Median)
	}
	latencies := func(a, b *Latency) (p50, p99 float64) {
		if a == nil || b == nil {
			return 0, 0
		}
		return div(a.Median, b.Median), div(a.P99, b.P99)
	}
	r.PodStartP50, r.PodStartP99 = latencies(mk.PodStart, km.PodStart)
	r.BoundToRunningP50, r.BoundToRunningP99 = latencies(mk.PodBoundToRunning, km.PodBoundToRunning)
	return r
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal the report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// WriteText writes the report as text: the phases side by side.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "make scale, %s: %d hollow nodes and %d pods per agent, one control plane (Kubernetes %s), %d CPUs, %d MiB, kernel %s\n",
		r.When.UTC().Format("2006-01-02 15:04 UTC"), r.Nodes, r.Pods, r.KubeVersion, r.Machine.CPUs, r.Machine.MemMiB, r.Machine.Kernel)
	if b := r.Baseline; b != nil {
		fmt.Fprintf(w, "control plane alone: apiserver %.1f%% of a core, etcd %.1f%%, %.0f requests/min\n",
			b.APIServerCPUPercent, b.EtcdCPUPercent, sum(b.RequestsPerMinute))
	}
	rows := []struct {
		name string
		f    func(p *Phase) string
	}{
		{"nodes Ready after", func(p *Phase) string { return fmt.Sprintf("%.1f s", p.ReadySeconds) }},
		{"agent RSS, idle (median/max)", func(p *Phase) string { return mem(p.Idle, func(w *Window) *Memory { return w.Agent }, rssOf) }},
		{"agent RSS, loaded (median/max)", func(p *Phase) string { return mem(p.Loaded, func(w *Window) *Memory { return w.Agent }, rssOf) }},
		{"agent anon, loaded", func(p *Phase) string { return mem(p.Loaded, func(w *Window) *Memory { return w.Agent }, anonOf) }},
		{"agent PSS, loaded", func(p *Phase) string { return mem(p.Loaded, func(w *Window) *Memory { return w.Agent }, pssOf) }},
		{"runtime RSS, loaded", func(p *Phase) string { return mem(p.Loaded, func(w *Window) *Memory { return w.Runtime }, rssOf) }},
		{"runtime anon, loaded", func(p *Phase) string { return mem(p.Loaded, func(w *Window) *Memory { return w.Runtime }, anonOf) }},
		{"runtime PSS, loaded", func(p *Phase) string { return mem(p.Loaded, func(w *Window) *Memory { return w.Runtime }, pssOf) }},
		{"all nodes' PSS, loaded", func(p *Phase) string { return totalPSS(p.Loaded) }},
		{"agent CPU per node, idle / loaded", func(p *Phase) string {
			return fmt.Sprintf("%s / %s", pct(p.Idle, func(w *Window) float64 { return w.AgentCPUPercent }), pct(p.Loaded, func(w *Window) float64 { return w.AgentCPUPercent }))
		}},
		{"node requests/node/min, idle / loaded", func(p *Phase) string {
			return fmt.Sprintf("%s / %s", num(p.Idle, func(w *Window) float64 { return w.NodeRequestsPerNodeMinute }), num(p.Loaded, func(w *Window) float64 { return w.NodeRequestsPerNodeMinute }))
		}},
		{"node requests per pod lifecycle", func(p *Phase) string { return fmt.Sprintf("%.1f", p.RequestsPerPod) }},
		{"  of which kubelet events", func(p *Phase) string { return fmt.Sprintf("%.1f", p.KubeletEventsPerPod) }},
		{"apiserver CPU, idle / loaded", func(p *Phase) string {
			return fmt.Sprintf("%s / %s", pct(p.Idle, func(w *Window) float64 { return w.APIServerCPUPercent }), pct(p.Loaded, func(w *Window) float64 { return w.APIServerCPUPercent }))
		}},
		{"pod create -> Running p50 / p99", func(p *Phase) string { return lat(p.PodStart, p.Running) }},
		{"pod bound -> Running p50 / p99", func(p *Phase) string { return lat(p.PodBoundToRunning, p.Running) }},
		{"all pods Running after", func(p *Phase) string { return fmt.Sprintf("%.1f s", p.AllRunningSeconds) }},
		{"pod delete -> gone p50 / p99", func(p *Phase) string { return lat(p.PodDelete, p.Gone) }},
	}
	fmt.Fprintf(w, "%-40s", "")
	for _, p := range r.Agents {
		fmt.Fprintf(w, " | %-28s", p.Kind)
	}
	fmt.Fprintln(w)
	for _, row := range rows {
		fmt.Fprintf(w, "%-40s", row.name)
		for _, p := range r.Agents {
			fmt.Fprintf(w, " | %-28s", row.f(p))
		}
		fmt.Fprintln(w)
	}
	for _, p := range r.Agents {
		if p.Error != "" {
			fmt.Fprintf(w, "%s stopped early: %s\n", p.Kind, p.Error)
		}
		if p.Loaded != nil {
			fmt.Fprintf(w, "%s, loaded, apiserver requests/min by verb (all clients): %s\n", p.Kind, topRequests(p.Loaded.RequestsPerMinute, 8))
		}
		if p.LifecycleRequestsPerPod != nil {
			fmt.Fprintf(w, "%s, apiserver requests per pod lifecycle by verb (all clients): %s\n", p.Kind, topRequests(p.LifecycleRequestsPerPod, 10))
		}
	}
	if q := r.Ratios; q != nil {
		fmt.Fprintf(w, "minikubelet / kubemark, loaded: agent RSS %.2fx (anon %.2fx, PSS %.2fx); agent+fakecri RSS %.2fx, PSS %.2fx; node requests per node and minute %.2fx, per pod (events left out) %.2fx; apiserver CPU %.2fx; pod start p50 %.2fx, p99 %.2fx (bound -> Running p50 %.2fx, p99 %.2fx)\n",
			q.AgentRSS, q.AgentAnon, q.AgentPSS, q.WithRuntimeRSS, q.WithRuntimePSS, q.NodeRequests, q.NodeRequestsPerPod, q.APIServerCPU, q.PodStartP50, q.PodStartP99, q.BoundToRunningP50, q.BoundToRunningP99)
	}
}

func rssOf(m *Memory) Spread  { return m.RSS }
func anonOf(m *Memory) Spread { return m.Anon }
func pssOf(m *Memory) Spread  { return m.PSS }

func mem(w *Window, pick func(*Window) *Memory, f func(*Memory) Spread) string {
	if w == nil || pick(w) == nil {
		return "-"
	}
	s := f(pick(w))
	return fmt.Sprintf("%.1f / %.1f MiB", s.Median, s.Max)
}

func totalPSS(w *Window) string {
	if w == nil || w.Agent == nil {
		return "-"
	}
	t := w.Agent.TotalPSSMiB
	if w.Runtime != nil {
		t += w.Runtime.TotalPSSMiB
	}
	return fmt.Sprintf("%.0f MiB", t)
}

func pct(w *Window, f func(*Window) float64) string {
	if w == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", f(w))
}

func num(w *Window, f func(*Window) float64) string {
	if w == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", f(w))
}

func lat(l *Latency, n int) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f ms (%d)", l.Median, l.P99, n)
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// topRequests lists the n most frequent "VERB resource" rates.
func topRequests(m map[string]float64, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
