package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/test/cluster"
)

// The node part of the cluster bench (issue 21 item 5): in the same
// one-node cluster as the streaming part, before it, with minikubelet and
// with the kubelet, how long a pod takes from its creation in the API to
// Running in its API status, and how many requests the node makes of the
// apiserver, counted exactly in the apiserver's audit log of the node's
// user (cluster.Options.AuditNode).
//
//   - steady: a few pods run; the node's requests over a window, per
//     minute. This is also the idle rate the lifecycle figures subtract.
//   - sequential: pods created one at a time, each waited for Running,
//     then deleted and waited for gone from the API; the latency of each
//     and the node's requests per pod lifecycle (create, Running, delete,
//     gone), minus the idle rate over the same time.
//   - batch: a batch of pods created at once (concurrently); each pod's
//     latency and the batch's (first create to last Running); then all
//     deleted at once; the requests per pod lifecycle as above.
//
// Each latency is from the bench's watch of the pods seeing a pod created
// to the same watch seeing it Running, so that the create call and the
// watch's delivery are not in it. The pods name the node (spec.nodeName),
// so that the scheduler's work is not in the figures either, and are what a user's pod is: the default service
// account's token and kube-root-ca.crt projected (a TokenRequest and a
// configMap watch for the node), the pod network, a container of the bed's
// busybox that exits on SIGTERM, a small CPU request.

// nodeOptions say how much the node part measures.
type nodeOptions struct {
	// steadyPods run while the steady rate is measured over steadyFor
	// (after settle), and stay for the rest.
	steadyPods int
	steadyFor  time.Duration
	// seqPods are created one at a time; batchPods at once.
	seqPods, batchPods int
	// batchSettle is how long the batch runs, once all Running, before
	// the agent's settled RSS is read (0: not read).
	batchSettle time.Duration
	// trace prints when each pod was seen created and Running (UTC, as
	// the components' logs), to read beside the agents' logs.
	trace bool
	// profile, if set, saves the agent's pprof endpoint what as name
	// (measurer.profile): a CPU profile of the batch, and the heap once
	// it is all Running.
	profile func(ctx context.Context, what, name string)
}

const (
	nodeBenchLabel = "minikubelet-bench"
	// settle is the wait after the steady pods run, before the steady
	// window: the agents' start-up requests are over by then.
	settle = 30 * time.Second
	// tail is the wait after a lifecycle's last pod is gone, before its
	// window ends: requests that follow a pod's deletion (final status,
	// events) are counted in it.
	tail = 5 * time.Second
)

// nodeBenchPod is one bench pod of the node part.
func nodeBenchPod(name, node, part string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{nodeBenchLabel: part}},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []v1.Container{{
				Name: "main", Image: benchImage,
				Command:   []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}},
			}},
		},
	}
}

// nodeFigures is what one agent measured, over every round.
type nodeFigures struct {
	Agent  string `json:"agent"`
	Rounds int    `json:"rounds"`
	// Sequential is each pod's creation to Running, pods created one at
	// a time; SequentialGone its deletion to gone from the API.
	Sequential     latency `json:"runningSequential"`
	SequentialGone latency `json:"goneSequential"`
	// Batch is each pod's creation to Running, in batches created at
	// once; BatchEnd each batch's first creation to its last Running.
	Batch    latency `json:"runningInBatch"`
	BatchEnd latency `json:"batchAllRunning"`
	// Where each pod's time went, read beside the runtime's container
	// events (CRI GetContainerEvents): from its creation to its container
	// started in the runtime (the agent's work before the runtime's, and
	// the runtime's calls), and from there to Running in the API status
	// (the agent learning of it and reporting it). One at a time and in
	// batches.
	SequentialToStarted latency `json:"createdToContainerStartedSequential"`
	SequentialToRunning latency `json:"containerStartedToRunningSequential"`
	BatchToStarted      latency `json:"createdToContainerStartedInBatch"`
	BatchToRunning      latency `json:"containerStartedToRunningInBatch"`
	// Requests per pod lifecycle (minus the idle rate), sequential and in
	// batches, and per minute at steady state.
	PerPodSequential requestFigures `json:"requestsPerPodSequential"`
	PerPodBatch      requestFigures `json:"requestsPerPodBatch"`
	PerMinute        requestFigures `json:"requestsPerMinuteSteady"`
	// The agent's CPU time per minute at steady state, and per pod
	// lifecycle one at a time and at once (minus the steady rate), in ms.
	CPUPerMinuteMs   float64 `json:"agentCPUPerMinuteMs"`
	CPUPerPodSeqMs   float64 `json:"agentCPUPerPodSequentialMs"`
	CPUPerPodBatchMs float64 `json:"agentCPUPerPodBatchMs"`
	// ContainerdCPUPerPodBatchMs is the containerd daemon's CPU time per
	// pod lifecycle at once (its shims' not counted), in ms: what the
	// agent's calls cost the runtime.
	ContainerdCPUPerPodBatchMs float64 `json:"containerdCPUPerPodBatchMs"`
	// LoadAverages are the machine's 1-minute load averages at the end of
	// each window (steady, one at a time, at once), round after round.
	LoadAverages []float64 `json:"loadAverages"`
	// SteadyRSSMiB and SteadyAnonMiB are the agent's RSS and its
	// anonymous part at the end of the steady window (the steady pods
	// running), the median of the rounds.
	SteadyRSSMiB  float64 `json:"steadyRSSMiB"`
	SteadyAnonMiB float64 `json:"steadyAnonMiB"`
	// BatchRSSMiB and BatchAnonMiB are the same once a batch is all
	// Running (the steady pods and the batch's).
	BatchRSSMiB  float64 `json:"batchRunningRSSMiB"`
	BatchAnonMiB float64 `json:"batchRunningAnonMiB"`
	// SettledRSSMiB and SettledAnonMiB are the same batchSettle later,
	// the node quiet with every pod running (0 when not measured).
	SettledRSSMiB  float64 `json:"batchSettledRSSMiB"`
	SettledAnonMiB float64 `json:"batchSettledAnonMiB"`
	SettleSeconds  float64 `json:"batchSettleSeconds"`

	// The rounds' samples, summed up by finish.
	seq, seqGone, batch, batchEnd  []time.Duration
	seqStarted, seqReported        []time.Duration
	batchStarted, batchReported    []time.Duration
	steady, seqReq, batchReq       requestWindow
	rss, anon, batchRSS, batchAnon []float64
	settledRSS, settledAnon        []float64
}

// requestWindow is the node's requests over windows of time, summed,
// with the agent's CPU time and the load averages at their ends.
type requestWindow struct {
	count  map[cluster.Request]int
	failed []string
	d      time.Duration
	pods   int
	cpu    time.Duration
	// ctrdCPU is containerd's.
	ctrdCPU time.Duration
	loads   []float64
}

func (w *requestWindow) add(m measured) {
	if w.count == nil {
		w.count = map[cluster.Request]int{}
	}
	for k, n := range m.req.Count {
		w.count[k] += n
	}
	w.failed = append(w.failed, m.req.FormatFailed()...)
	w.d += m.d
	w.pods += m.pods
	w.cpu += m.cpu
	w.ctrdCPU += m.ctrdCPU
	w.loads = append(w.loads, m.load)
}

// requestFigures are request counts per unit (a pod lifecycle, a minute).
type requestFigures struct {
	Total float64 `json:"total"`
	// ByKind is by "verb resource[/subresource]".
	ByKind map[string]float64 `json:"byKind"`
	// Failed lists the answers of 400 or more, "verb resource: code xN".
	Failed []string `json:"failed,omitempty"`
}

// perMinute is the steady window's requests per minute.
func (w *requestWindow) perMinute() requestFigures {
	f := requestFigures{ByKind: map[string]float64{}, Failed: w.failed}
	if w.d <= 0 {
		return f
	}
	for k, n := range w.count {
		v := float64(n) / w.d.Minutes()
		f.ByKind[k.String()] = v
		f.Total += v
	}
	return f
}

// perPod is a lifecycle window's requests per pod, minus what the idle
// rate makes over the window's time.
func (w *requestWindow) perPod(idle *requestWindow) requestFigures {
	f := requestFigures{ByKind: map[string]float64{}, Failed: w.failed}
	if w.pods == 0 {
		return f
	}
	kinds := map[cluster.Request]bool{}
	for k := range w.count {
		kinds[k] = true
	}
	for k := range idle.count {
		kinds[k] = true
	}
	for k := range kinds {
		n := float64(w.count[k])
		if idle.d > 0 {
			n -= float64(idle.count[k]) * w.d.Seconds() / idle.d.Seconds()
		}
		v := n / float64(w.pods)
		if math.Abs(v) < 0.005 {
			continue
		}
		f.ByKind[k.String()] = v
		f.Total += v
	}
	return f
}

func (f *nodeFigures) finish() {
	f.Sequential, f.SequentialGone = summarize(f.seq), summarize(f.seqGone)
	f.Batch, f.BatchEnd = summarize(f.batch), summarize(f.batchEnd)
	f.SequentialToStarted, f.SequentialToRunning = summarize(f.seqStarted), summarize(f.seqReported)
	f.BatchToStarted, f.BatchToRunning = summarize(f.batchStarted), summarize(f.batchReported)
	f.PerMinute = f.steady.perMinute()
	f.PerPodSequential = f.seqReq.perPod(&f.steady)
	f.PerPodBatch = f.batchReq.perPod(&f.steady)
	f.CPUPerMinuteMs = f.steady.cpuPerMinute()
	f.CPUPerPodSeqMs = f.seqReq.cpuPerPod(&f.steady)
	f.CPUPerPodBatchMs = f.batchReq.cpuPerPod(&f.steady)
	if f.batchReq.pods > 0 {
		f.ContainerdCPUPerPodBatchMs = ms(f.batchReq.ctrdCPU) / float64(f.batchReq.pods)
	}
	f.SteadyRSSMiB, f.SteadyAnonMiB = medianFloat(f.rss), medianFloat(f.anon)
	f.BatchRSSMiB, f.BatchAnonMiB = medianFloat(f.batchRSS), medianFloat(f.batchAnon)
	f.SettledRSSMiB, f.SettledAnonMiB = medianFloat(f.settledRSS), medianFloat(f.settledAnon)
}

// cpuPerMinute is the agent's CPU time per minute over the window, in ms.
func (w *requestWindow) cpuPerMinute() float64 {
	if w.d <= 0 {
		return 0
	}
	return ms(w.cpu) / w.d.Minutes()
}

// cpuPerPod is the agent's CPU time per pod, minus what the idle rate
// spends over the window's time, in ms.
func (w *requestWindow) cpuPerPod(idle *requestWindow) float64 {
	if w.pods == 0 {
		return 0
	}
	return (ms(w.cpu) - idle.cpuPerMinute()*w.d.Minutes()) / float64(w.pods)
}

// printRound prints the last round's figures, so that a run cut short
// still tells what it measured.
func (f *nodeFigures) printRound(o nodeOptions, last *nodeFigures) {
	fmt.Printf("  %s, round %d: created -> Running: one at a time median %.0f ms, p99 %.0f ms; %d at once: median %.0f ms, all %.0f ms\n",
		f.Agent, f.Rounds, ms(median(f.seq[len(f.seq)-o.seqPods:])), ms(pct(f.seq[len(f.seq)-o.seqPods:], 0.99)),
		o.batchPods, ms(median(f.batch[len(f.batch)-o.batchPods:])), ms(f.batchEnd[len(f.batchEnd)-1]))
	fmt.Printf("  %s, round %d: requests per minute at steady state %.1f; per pod lifecycle %.1f (one at a time), %.1f (at once)\n",
		f.Agent, f.Rounds, last.steady.perMinute().Total, last.seqReq.perPod(&last.steady).Total, last.batchReq.perPod(&last.steady).Total)
	fmt.Printf("  %s, round %d: agent CPU %.0f ms a minute at steady state; per pod lifecycle %.0f ms (one at a time), %.0f ms (at once; containerd %.0f ms); load averages %v\n",
		f.Agent, f.Rounds, last.steady.cpuPerMinute(), last.seqReq.cpuPerPod(&last.steady), last.batchReq.cpuPerPod(&last.steady), ms(last.batchReq.ctrdCPU)/float64(max(1, last.batchReq.pods)), last.loads())
}

// nodeReport is the node part of the report.
type nodeReport struct {
	SteadyPods int `json:"steadyPods"`
	// SteadyMinutes is each round's steady window.
	SteadyMinutes float64 `json:"steadyMinutes"`
	SeqPods       int     `json:"sequentialPods"`
	BatchPods     int     `json:"batchPods"`
	// Agents: minikubelet, then the kubelet.
	Agents []nodeFigures `json:"agents"`
	// Ratios are minikubelet's figures over the kubelet's; below 1 is
	// better for all.
	Ratios nodeRatios `json:"ratiosMinikubeletOverKubelet"`
}

type nodeRatios struct {
	SequentialMedian float64 `json:"runningSequentialMedian"`
	SequentialP99    float64 `json:"runningSequentialP99"`
	BatchMedian      float64 `json:"runningInBatchMedian"`
	BatchP99         float64 `json:"runningInBatchP99"`
	BatchEnd         float64 `json:"batchAllRunningMedian"`
	PerPodSequential float64 `json:"requestsPerPodSequential"`
	PerPodBatch      float64 `json:"requestsPerPodBatch"`
	PerMinute        float64 `json:"requestsPerMinuteSteady"`
}

func newNodeReport(o nodeOptions, m, k nodeFigures) *nodeReport {
	return &nodeReport{
		SteadyPods: o.steadyPods, SteadyMinutes: o.steadyFor.Minutes(), SeqPods: o.seqPods, BatchPods: o.batchPods,
		Agents: []nodeFigures{m, k},
		Ratios: nodeRatios{
			SequentialMedian: ratio(m.Sequential.MedianMs, k.Sequential.MedianMs),
			SequentialP99:    ratio(m.Sequential.P99Ms, k.Sequential.P99Ms),
			BatchMedian:      ratio(m.Batch.MedianMs, k.Batch.MedianMs),
			BatchP99:         ratio(m.Batch.P99Ms, k.Batch.P99Ms),
			BatchEnd:         ratio(m.BatchEnd.MedianMs, k.BatchEnd.MedianMs),
			PerPodSequential: ratio(m.PerPodSequential.Total, k.PerPodSequential.Total),
			PerPodBatch:      ratio(m.PerPodBatch.Total, k.PerPodBatch.Total),
			PerMinute:        ratio(m.PerMinute.Total, k.PerMinute.Total),
		},
	}
}

func (nr *nodeReport) print() {
	m, k := nr.Agents[0], nr.Agents[1]
	fmt.Printf("node mode: pods created in the API (spec.nodeName set) -> Running in the API status, watched; %d rounds per agent\n", m.Rounds)
	fmt.Printf("  %-12s %-36s %-36s %s\n", "", fmt.Sprintf("one at a time (%d pods)", m.Sequential.N), fmt.Sprintf("%d at once (%d pods)", nr.BatchPods, m.Batch.N), fmt.Sprintf("%d at once: all Running (%d batches)", nr.BatchPods, m.BatchEnd.N))
	for _, f := range nr.Agents {
		fmt.Printf("  %-12s median %6.0f ms  p99 %6.0f ms        median %6.0f ms  p99 %6.0f ms        median %6.0f ms  max %6.0f ms\n",
			f.Agent, f.Sequential.MedianMs, f.Sequential.P99Ms, f.Batch.MedianMs, f.Batch.P99Ms, f.BatchEnd.MedianMs, f.BatchEnd.MaxMs)
	}
	fmt.Printf("  ratio minikubelet/kubelet: one at a time median %.2fx, p99 %.2fx; at once median %.2fx, p99 %.2fx; all Running %.2fx (target 0.7x)\n",
		nr.Ratios.SequentialMedian, nr.Ratios.SequentialP99, nr.Ratios.BatchMedian, nr.Ratios.BatchP99, nr.Ratios.BatchEnd)
	fmt.Printf("  where the time goes (medians): created -> its container started in the runtime (CRI event) -> Running in the API status\n")
	for _, f := range nr.Agents {
		fmt.Printf("  %-12s one at a time %6.0f ms + %4.0f ms (p99 %6.0f + %4.0f)      at once %6.0f ms + %4.0f ms (p99 %6.0f + %4.0f)\n",
			f.Agent, f.SequentialToStarted.MedianMs, f.SequentialToRunning.MedianMs, f.SequentialToStarted.P99Ms, f.SequentialToRunning.P99Ms,
			f.BatchToStarted.MedianMs, f.BatchToRunning.MedianMs, f.BatchToStarted.P99Ms, f.BatchToRunning.P99Ms)
	}
	fmt.Printf("  deleted -> gone from the API, one at a time: minikubelet median %.0f ms, kubelet %.0f ms\n", m.SequentialGone.MedianMs, k.SequentialGone.MedianMs)
	fmt.Printf("  agent CPU: minikubelet %.0f ms a minute at steady state, %.0f ms per pod one at a time, %.0f ms per pod at once; kubelet %.0f, %.0f, %.0f ms\n",
		m.CPUPerMinuteMs, m.CPUPerPodSeqMs, m.CPUPerPodBatchMs, k.CPUPerMinuteMs, k.CPUPerPodSeqMs, k.CPUPerPodBatchMs)
	fmt.Printf("  containerd's CPU per pod at once: minikubelet %.0f ms, kubelet %.0f ms\n", m.ContainerdCPUPerPodBatchMs, k.ContainerdCPUPerPodBatchMs)
	fmt.Printf("  agent RSS with %d pods running (end of the steady window): minikubelet %.1f MiB (anonymous %.1f), kubelet %.1f MiB (anonymous %.1f); ratio %.2fx (target 0.33x)\n",
		nr.SteadyPods, m.SteadyRSSMiB, m.SteadyAnonMiB, k.SteadyRSSMiB, k.SteadyAnonMiB, ratio(m.SteadyRSSMiB, k.SteadyRSSMiB))
	fmt.Printf("  agent RSS with %d pods running (a batch all Running): minikubelet %.1f MiB (anonymous %.1f), kubelet %.1f MiB (anonymous %.1f); ratio %.2fx (target 0.33x)\n",
		nr.SteadyPods+nr.BatchPods, m.BatchRSSMiB, m.BatchAnonMiB, k.BatchRSSMiB, k.BatchAnonMiB, ratio(m.BatchRSSMiB, k.BatchRSSMiB))
	if m.SettledRSSMiB > 0 {
		fmt.Printf("  agent RSS with %d pods running (%.0f s after the batch all ran): minikubelet %.1f MiB (anonymous %.1f), kubelet %.1f MiB (anonymous %.1f); ratio %.2fx (target 0.33x)\n",
			nr.SteadyPods+nr.BatchPods, m.SettleSeconds, m.SettledRSSMiB, m.SettledAnonMiB, k.SettledRSSMiB, k.SettledAnonMiB, ratio(m.SettledRSSMiB, k.SettledRSSMiB))
	}
	fmt.Printf("  load averages (1 min) at the end of each window: minikubelet %v, kubelet %v\n", m.LoadAverages, k.LoadAverages)
	fmt.Printf("node mode: the node's apiserver requests (audit log of system:node:<name>), per pod lifecycle (create, Running, delete, gone; minus the idle rate) and per minute with %d pods running (%.1f min a round)\n", nr.SteadyPods, nr.SteadyMinutes)
	fmt.Printf("  %-44s %12s %12s %8s\n", "", "minikubelet", "kubelet", "ratio")
	row := func(name string, a, b float64) {
		fmt.Printf("  %-44s %12.2f %12.2f %7.2fx\n", name, a, b, ratio(a, b))
	}
	section := func(title string, a, b requestFigures) {
		row(title, a.Total, b.Total)
		kinds := map[string]bool{}
		for s := range a.ByKind {
			kinds[s] = true
		}
		for s := range b.ByKind {
			kinds[s] = true
		}
		names := make([]string, 0, len(kinds))
		for s := range kinds {
			names = append(names, s)
		}
		sort.Slice(names, func(i, j int) bool {
			di, dj := a.ByKind[names[i]]+b.ByKind[names[i]], a.ByKind[names[j]]+b.ByKind[names[j]]
			if di != dj {
				return di > dj
			}
			return names[i] < names[j]
		})
		for _, s := range names {
			row("    "+s, a.ByKind[s], b.ByKind[s])
		}
		if len(a.Failed)+len(b.Failed) > 0 {
			fmt.Printf("    failed: minikubelet %v; kubelet %v\n", a.Failed, b.Failed)
		}
	}
	section("per pod, one at a time", m.PerPodSequential, k.PerPodSequential)
	section(fmt.Sprintf("per pod, %d at once", nr.BatchPods), m.PerPodBatch, k.PerPodBatch)
	section("per minute at steady state", m.PerMinute, k.PerMinute)
}

// nodeBench runs the node part against a started cluster and adds the
// round's samples to f. last receives the round's own windows.
func nodeBench(ctx context.Context, c *cluster.Cluster, client kubernetes.Interface, o nodeOptions, f, last *nodeFigures) error {
	tr, err := trackPods(ctx, client)
	if err != nil {
		return err
	}
	tr.trace = o.trace
	defer tr.stop()
	starts, err := watchStarts(ctx, c.Containerd())
	if err != nil {
		return err
	}
	defer starts.close()
	node := c.NodeName()
	// Steady: a few pods run.
	var steady []string
	for i := 0; i < o.steadyPods; i++ {
		name := fmt.Sprintf("steady-%d", i)
		steady = append(steady, name)
		if _, err := client.CoreV1().Pods("default").Create(ctx, nodeBenchPod(name, node, "steady"), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", name, err)
		}
	}
	for _, name := range steady {
		if _, _, err := tr.waitRunning(ctx, name, 3*time.Minute); err != nil {
			return err
		}
	}
	time.Sleep(settle)
	w, err := window(c, func() (int, error) { time.Sleep(o.steadyFor); return 0, nil })
	if err != nil {
		return err
	}
	f.steady.add(w)
	last.steady.add(w)
	rss, anon, err := settledRSS(c.AgentPID())
	if err != nil {
		return err
	}
	f.rss, f.anon = append(f.rss, float64(rss)/(1<<20)), append(f.anon, float64(anon)/(1<<20))

	// One at a time.
	w, err = window(c, func() (int, error) {
		for i := 0; i < o.seqPods; i++ {
			name := fmt.Sprintf("seq-%d", i)
			started := starts.expect(name)
			if _, err := client.CoreV1().Pods("default").Create(ctx, nodeBenchPod(name, node, "seq"), metav1.CreateOptions{}); err != nil {
				return 0, fmt.Errorf("create pod %s: %w", name, err)
			}
			took, at, err := tr.waitRunning(ctx, name, 2*time.Minute)
			if err != nil {
				return 0, err
			}
			f.seq = append(f.seq, took)
			toStarted, toRunning, err := split(starts, name, started, at, took, startEventWait)
			if err != nil {
				return 0, err
			}
			f.seqStarted, f.seqReported = append(f.seqStarted, toStarted), append(f.seqReported, toRunning)
			start := time.Now()
			if err := client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return 0, fmt.Errorf("delete pod %s: %w", name, err)
			}
			gone, err := tr.waitGone(ctx, name, 2*time.Minute)
			if err != nil {
				return 0, err
			}
			f.seqGone = append(f.seqGone, gone.Sub(start))
		}
		time.Sleep(tail)
		return o.seqPods, nil
	})
	if err != nil {
		return err
	}
	f.seqReq.add(w)
	last.seqReq.add(w)

	// At once.
	if o.profile != nil {
		go o.profile(ctx, "profile?seconds=20", "batch.cpu.pprof")
	}
	// The batch's requests and CPU are those of two windows, its start and
	// its removal; what the node does with it all running between them is
	// steady state, where its settled RSS is read.
	names := make([]string, o.batchPods)
	errs := make([]error, o.batchPods)
	var wg sync.WaitGroup
	w, err = window(c, func() (int, error) {
		started := make([]<-chan time.Time, len(names))
		for i := range names {
			names[i] = fmt.Sprintf("batch-%d", i)
			started[i] = starts.expect(names[i])
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = client.CoreV1().Pods("default").Create(ctx, nodeBenchPod(names[i], node, "batch"), metav1.CreateOptions{})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, fmt.Errorf("create the batch: %w", err)
		}
		var first, lastRunning time.Time
		for i, name := range names {
			took, at, err := tr.waitRunning(ctx, name, 5*time.Minute)
			if err != nil {
				return 0, err
			}
			f.batch = append(f.batch, took)
			toStarted, toRunning, err := split(starts, name, started[i], at, took, startEventWait)
			if err != nil {
				return 0, err
			}
			f.batchStarted, f.batchReported = append(f.batchStarted, toStarted), append(f.batchReported, toRunning)
			if added := at.Add(-took); first.IsZero() || added.Before(first) {
				first = added
			}
			if at.After(lastRunning) {
				lastRunning = at
			}
		}
		f.batchEnd = append(f.batchEnd, lastRunning.Sub(first))
		rss, anon, err := settledRSS(c.AgentPID())
		if err != nil {
			return 0, err
		}
		f.batchRSS, f.batchAnon = append(f.batchRSS, float64(rss)/(1<<20)), append(f.batchAnon, float64(anon)/(1<<20))
		if o.profile != nil {
			// Where that memory is: the heap with every pod running.
			o.profile(ctx, "heap", "batch.heap.pprof")
			o.profile(ctx, "heap?debug=1", "batch.heap.txt")
		}
		time.Sleep(tail)
		return 0, nil
	})
	if err != nil {
		return err
	}
	f.batchReq.add(w)
	last.batchReq.add(w)
	if o.batchSettle > 0 {
		time.Sleep(o.batchSettle)
		rss, anon, err := settledRSS(c.AgentPID())
		if err != nil {
			return err
		}
		f.settledRSS, f.settledAnon = append(f.settledRSS, float64(rss)/(1<<20)), append(f.settledAnon, float64(anon)/(1<<20))
		f.SettleSeconds = o.batchSettle.Seconds()
	}
	w, err = window(c, func() (int, error) {
		for i, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, fmt.Errorf("delete the batch: %w", err)
		}
		for _, name := range names {
			if _, err := tr.waitGone(ctx, name, 5*time.Minute); err != nil {
				return 0, err
			}
		}
		time.Sleep(tail)
		return o.batchPods, nil
	})
	if err != nil {
		return err
	}
	f.batchReq.add(w)
	last.batchReq.add(w)
	f.LoadAverages = append(f.LoadAverages, last.loads()...)
	return nil
}

// startEventWait bounds how long after a pod is seen Running its
// container's CONTAINER_STARTED event may still arrive.
const startEventWait = 10 * time.Second

// split divides a pod's creation-to-Running (took, seen Running at) at
// its container's start in the runtime, which started received. The
// event comes before the status that reports it, give or take the two
// streams' delivery; a pod seen Running without it within within fails
// the bench.
func split(starts *startWatch, name string, started <-chan time.Time, running time.Time, took, within time.Duration) (toStarted, toRunning time.Duration, err error) {
	at, err := starts.await(name, started, "CONTAINER_STARTED", within)
	if err != nil {
		return 0, 0, fmt.Errorf("%w, though Running in the API", err)
	}
	created := running.Add(-took)
	return at.Sub(created), running.Sub(at), nil
}

// measured is one window's requests, length, pods, the agent's CPU time
// and the machine's load average (1 min) at its end.
type measured struct {
	req  cluster.Requests
	d    time.Duration
	pods int
	cpu  time.Duration
	// ctrdCPU is containerd's (the daemon's, not its shims').
	ctrdCPU time.Duration
	load    float64
}

// window runs do between two marks of the node's audit log.
func window(c *cluster.Cluster, do func() (pods int, err error)) (measured, error) {
	from, err := c.AuditMark()
	if err != nil {
		return measured{}, err
	}
	pid, ctrd := c.AgentPID(), c.Containerd().PID()
	cpu0, _, err := procStat(pid)
	if err != nil {
		return measured{}, err
	}
	ctrd0, _, err := procStat(ctrd)
	if err != nil {
		return measured{}, err
	}
	start := time.Now()
	pods, err := do()
	if err != nil {
		return measured{}, err
	}
	d := time.Since(start)
	cpu1, _, err := procStat(pid)
	if err != nil {
		return measured{}, err
	}
	ctrd1, _, err := procStat(ctrd)
	if err != nil {
		return measured{}, err
	}
	to, err := c.AuditMark()
	if err != nil {
		return measured{}, err
	}
	req, err := c.NodeRequests(from, to)
	return measured{req: req, d: d, pods: pods, cpu: cpu1 - cpu0, ctrdCPU: ctrd1 - ctrd0, load: loadAverage()}, err
}

// loadAverage is the machine's load average over the last minute, 0 if
// it cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(b), &l)
	return l
}

// podTracker records, from a watch of the bench's pods, when each was
// first seen Running in its status and when it was gone.
type podTracker struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the watch loop ends

	mu sync.Mutex
	// added, running and gone are when each pod was first seen created,
	// Running and deleted.
	added, running, gone map[string]time.Time
	// changed is closed and replaced at each record.
	changed chan struct{}
	err     error
	trace   bool
}

func trackPods(ctx context.Context, client kubernetes.Interface) (*podTracker, error) {
	list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: nodeBenchLabel})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	tr := &podTracker{cancel: cancel, done: make(chan struct{}), added: map[string]time.Time{}, running: map[string]time.Time{}, gone: map[string]time.Time{}, changed: make(chan struct{})}
	go tr.loop(wctx, client, list.ResourceVersion)
	return tr, nil
}

func (tr *podTracker) stop() {
	tr.cancel()
	<-tr.done
}

// loop watches from rv, again from the last version seen when the watch
// ends, until ctx ends.
func (tr *podTracker) loop(ctx context.Context, client kubernetes.Interface, rv string) {
	defer close(tr.done)
	for ctx.Err() == nil {
		w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: nodeBenchLabel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				tr.fail(fmt.Errorf("watch the bench pods: %w", err))
			}
			return
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				w.Stop()
				tr.fail(fmt.Errorf("watch the bench pods: %v", ev.Object))
				return
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			rv = p.ResourceVersion
			if ev.Type == watch.Added {
				tr.record(tr.added, p.Name, now)
			}
			switch {
			case ev.Type == watch.Deleted:
				tr.record(tr.gone, p.Name, now)
			case ev.Type != watch.Bookmark && p.Status.Phase == v1.PodRunning:
				tr.record(tr.running, p.Name, now)
			}
		}
		w.Stop()
	}
}

func (tr *podTracker) record(m map[string]time.Time, name string, at time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if _, ok := m[name]; ok {
		return
	}
	m[name] = at
	close(tr.changed)
	tr.changed = make(chan struct{})
}

func (tr *podTracker) fail(err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.err = err
	close(tr.changed)
	tr.changed = make(chan struct{})
}

// waitRunning returns how long after it was seen created pod name was
// seen Running, and when.
func (tr *podTracker) waitRunning(ctx context.Context, name string, timeout time.Duration) (time.Duration, time.Time, error) {
	at, err := tr.wait(ctx, tr.running, name, "Running", timeout)
	if err != nil {
		return 0, at, err
	}
	tr.mu.Lock()
	added, ok := tr.added[name]
	tr.mu.Unlock()
	if !ok {
		return 0, at, fmt.Errorf("pod %s seen Running but never created", name)
	}
	if tr.trace {
		fmt.Printf("  bench: pod %s seen created %s, Running %s (+%v)\n", name, added.UTC().Format("15:04:05.000000"), at.UTC().Format("15:04:05.000000"), at.Sub(added).Round(time.Millisecond))
	}
	return at.Sub(added), at, nil
}

func (tr *podTracker) waitGone(ctx context.Context, name string, timeout time.Duration) (time.Time, error) {
	return tr.wait(ctx, tr.gone, name, "gone from the API", timeout)
}

// wait returns when name was recorded in m.
func (tr *podTracker) wait(ctx context.Context, m map[string]time.Time, name, what string, timeout time.Duration) (time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		tr.mu.Lock()
		at, ok := m[name]
		err, changed := tr.err, tr.changed
		tr.mu.Unlock()
		switch {
		case ok:
			return at, nil
		case err != nil:
			return time.Time{}, err
		}
		select {
		case <-changed:
		case <-timer.C:
			return time.Time{}, fmt.Errorf("pod %s not %s within %v", name, what, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// loads are the load averages at the ends of the windows, steady, one at
// a time and at once.
func (f *nodeFigures) loads() []float64 {
	var out []float64
	for _, w := range []*requestWindow{&f.steady, &f.seqReq, &f.batchReq} {
		out = append(out, w.loads...)
	}
	return out
}
