package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minikubelet/minikubelet/test/cluster"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Options say what to run.
type Options struct {
	// Bed and Bins name the control plane's binaries. Required.
	Bed  *ctrdtest.Bed
	Bins *cluster.Bins
	// Dir is the base directory of the cluster (test/cluster's
	// Options.Dir). Required.
	Dir string
	// Minikubelet, FakeCRI and Kubemark are the binaries; Kinds which
	// agents run, in that order.
	Minikubelet, FakeCRI, Kubemark string
	Kinds                          []cluster.HollowKind
	// Nodes and Pods per agent kind.
	Nodes, Pods int
	// Settle is how long statuses settle before a window; Window how long
	// a window lasts.
	Settle, Window time.Duration
	// Parallel is how many create or delete calls run at once.
	Parallel int
	// Timeout bounds the whole run; MinFreeMiB stops it when the host's
	// MemAvailable falls below.
	Timeout    time.Duration
	MinFreeMiB int64
	// LogDir, if set, receives the control plane's logs and those of each
	// set's first node.
	LogDir string
	// Logf is told what the run does.
	Logf func(format string, args ...any)
}

// Timeouts of the phases' waits.
const (
	readyTimeout   = 10 * time.Minute
	runningTimeout = 10 * time.Minute
	goneTimeout    = 10 * time.Minute
	memoryPoll     = 2 * time.Second
)

// Run runs the control plane and every phase, and returns the report; a
// phase that fails says why in its Error and the run goes on to the next.
// Everything it started is stopped and removed when it returns.
func Run(ctx context.Context, o Options) (_ *Report, err error) {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go guardMemory(ctx, cancel, o.MinFreeMiB)
	restore, err := raiseInotifyInstances(o.Nodes)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, restore()) }()

	rep := &Report{When: time.Now(), Machine: machineInfo(), KubeVersion: o.Bins.KubeVersion, Nodes: o.Nodes, Pods: o.Pods, WindowSeconds: o.Window.Seconds()}
	c, err := cluster.Start(ctx, cluster.Options{Bed: o.Bed, Bins: o.Bins, Dir: o.Dir, Agent: cluster.NoAgent, LogDir: o.LogDir, Logf: o.Logf})
	if err != nil {
		return nil, withCause(ctx, err)
	}
	defer func() { err = errors.Join(err, c.Stop(context.WithoutCancel(ctx))) }()
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	schemas, err := nodeFlowSchemas(ctx, client)
	if err != nil {
		return nil, err
	}
	r := &runner{o: o, c: c, client: client, schemas: schemas}
	r.logf("control plane up; the nodes' requests are counted under the flow schemas %s", strings.Join(schemas, ", "))
	if rep.Baseline, err = r.window(ctx, nil, 0); err != nil {
		return nil, withCause(ctx, err)
	}
	for _, kind := range o.Kinds {
		p := r.phase(ctx, kind)
		rep.Agents = append(rep.Agents, p)
		if ctx.Err() != nil {
			return rep, withCause(ctx, ctx.Err())
		}
	}
	var mk, km *Phase
	for _, p := range rep.Agents {
		switch cluster.HollowKind(p.Kind) {
		case cluster.HollowMinikubelet:
			mk = p
		case cluster.HollowKubemark:
			km = p
		}
	}
	rep.Ratios = ratios(mk, km)
	return rep, nil
}

// withCause adds ctx's cause (the memory guard's) to err.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// guardMemory cancels the run when the host's MemAvailable falls below
// minMiB.
func guardMemory(ctx context.Context, cancel context.CancelCauseFunc, minMiB int64) {
	if minMiB <= 0 {
		return
	}
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		avail, err := memAvailable()
		if err == nil && avail < minMiB<<20 {
			cancel(fmt.Errorf("the host's MemAvailable fell to %d MiB, below -min-free-mib %d: stopping", avail>>20, minMiB))
			return
		}
	}
}

// runner holds what the phases share.
type runner struct {
	o       Options
	c       *cluster.Cluster
	client  kubernetes.Interface
	schemas []string
}

func (r *runner) logf(format string, args ...any) {
	if r.o.Logf != nil {
		r.o.Logf("scale: "+format, args...)
	}
}

// phase runs one agent kind (see the package doc). It returns what it
// measured, with the error that stopped it, if any.
func (r *runner) phase(ctx context.Context, kind cluster.HollowKind) *Phase {
	p := &Phase{Kind: string(kind)}
	if err := r.runPhase(ctx, kind, p); err != nil {
		if cp := r.c.ControlPlaneError(); cp != nil && !errors.Is(err, cp) {
			err = fmt.Errorf("%w; the control plane broke: %w", err, cp)
		}
		p.Error = withCause(ctx, err).Error()
		r.logf("%s: %v", kind, err)
	}
	return p
}

func (r *runner) runPhase(ctx context.Context, kind cluster.HollowKind, p *Phase) (err error) {
	opts := cluster.HollowOptions{Kind: kind, Count: r.o.Nodes, Binary: r.o.Minikubelet, FakeCRI: r.o.FakeCRI, Prefix: "mk"}
	if kind == cluster.HollowKubemark {
		opts = cluster.HollowOptions{Kind: kind, Count: r.o.Nodes, Binary: r.o.Kubemark, Prefix: "km"}
	}
	p.Binary = opts.Binary
	if fi, err := os.Stat(opts.Binary); err == nil {
		p.BinaryBytes = fi.Size()
	}
	t0 := time.Now()
	h, err := r.c.StartHollow(ctx, opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.Stop(context.WithoutCancel(ctx))) }()
	wctx, cancel := context.WithTimeout(ctx, readyTimeout)
	err = h.WaitReady(wctx)
	cancel()
	if err != nil {
		return err
	}
	p.ReadySeconds = time.Since(t0).Seconds()
	r.logf("%s: %d nodes Ready in %.1fs", kind, r.o.Nodes, p.ReadySeconds)
	if p.Idle, err = r.window(ctx, h, r.o.Settle); err != nil {
		return err
	}

	ns := "scale-" + string(kind)
	if err := r.namespace(ctx, ns); err != nil {
		return err
	}
	tr := newTracker()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watching := make(chan struct{}) // closed by watchPods once its first watch is open
	go tr.watchPods(wctx, r.client, ns, watching)
	select {
	case <-watching:
	case <-ctx.Done():
		return ctx.Err()
	}
	names := make([]string, r.o.Pods)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%04d", i)
	}
	before, err := scrape(ctx, r.client, r.schemas)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := tr.createPods(ctx, r.client, ns, names, r.o.Parallel); err != nil {
		return err
	}
	p.Running, err = tr.waitCount(ctx, tr.running, r.o.Pods, runningTimeout, r.c.ControlPlaneError)
	if err != nil {
		return err
	}
	p.AllRunningSeconds = time.Since(start).Seconds()
	p.PodStart = latency(tr.latencies(tr.created, tr.running))
	p.PodBoundToRunning = latency(tr.latencies(tr.bound, tr.running))
	r.logf("%s: %d of %d pods Running in %.1fs", kind, p.Running, r.o.Pods, p.AllRunningSeconds)
	if p.Running < r.o.Pods {
		return fmt.Errorf("%d of %d pods Running after %v", p.Running, r.o.Pods, runningTimeout)
	}
	if p.Loaded, err = r.window(ctx, h, r.o.Settle); err != nil {
		return err
	}

	if err := tr.deletePods(ctx, r.client, ns, names, r.o.Parallel); err != nil {
		return err
	}
	p.Gone, err = tr.waitCount(ctx, tr.gone, r.o.Pods, goneTimeout, r.c.ControlPlaneError)
	if err != nil {
		return err
	}
	p.PodDelete = latency(tr.latencies(tr.deleted, tr.gone))
	after, err := scrape(ctx, r.client, r.schemas)
	if err != nil {
		return err
	}
	// The nodes' requests over the pods' lives, beyond what they make
	// idle in that time; the loaded window is not part of a life.
	lived := after.at.Sub(before.at).Minutes() - p.Loaded.Seconds/60
	extra := after.nodes - before.nodes - p.Loaded.NodeRequestsPerMinute*p.Loaded.Seconds/60 - p.Idle.NodeRequestsPerMinute*lived
	p.RequestsPerPod = extra / float64(r.o.Pods)
	p.LifecycleRequestsPerPod = map[string]float64{}
	for k, v := range after.byVerb {
		if d := v - before.byVerb[k]; d > 0 {
			p.LifecycleRequestsPerPod[k] = d / float64(r.o.Pods)
		}
	}
	events, err := r.kubeletEvents(ctx, ns)
	if err != nil {
		return err
	}
	p.KubeletEventsPerPod = float64(events) / float64(r.o.Pods)
	p.RequestsPerPodWithoutEvents = p.RequestsPerPod - p.KubeletEventsPerPod
	r.logf("%s: %d of %d pods gone; %.1f node requests per pod, %.1f of them kubelet events", kind, p.Gone, r.o.Pods, p.RequestsPerPod, p.KubeletEventsPerPod)
	if p.Gone < r.o.Pods {
		return fmt.Errorf("%d of %d pods gone after %v", p.Gone, r.o.Pods, goneTimeout)
	}
	return nil
}

// kubeletEvents counts the event writes of source kubelet in ns: each
// event's count (an aggregated event is one create and count-1 updates).
func (r *runner) kubeletEvents(ctx context.Context, ns string) (int, error) {
	list, err := r.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list events of %s: %w", ns, err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Source.Component == "kubelet" || e.ReportingController == "kubelet" {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}

// namespace creates ns with its default ServiceAccount, which pods need
// (the controller-manager makes it too, but may lag behind on a busy
// host).
func (r *runner) namespace(ctx context.Context, ns string) error {
	_, err := r.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	_, err = r.client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the default ServiceAccount of %s: %w", ns, err)
	}
	return nil
}

// window waits settle, then measures for o.Window: the apiserver's
// counters and CPU, etcd's CPU, and, with a node set, each node's agent
// and runtime CPU and, at the end, their memory.
func (r *runner) window(ctx context.Context, h *cluster.Hollow, settle time.Duration) (*Window, error) {
	sleepCtx(ctx, settle)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	type procs struct{ agent, runtime []int }
	var ps procs
	if h != nil {
		for _, n := range h.Nodes() {
			ps.agent = append(ps.agent, n.AgentPID())
			if pid := n.RuntimePID(); pid != 0 {
				ps.runtime = append(ps.runtime, pid)
			}
		}
	}
	cpus := func(pids []int) (time.Duration, error) {
		var sum time.Duration
		for _, pid := range pids {
			d, err := cpuTime(pid)
			if err != nil {
				return 0, fmt.Errorf("CPU time of %d: %w", pid, err)
			}
			sum += d
		}
		return sum, nil
	}
	a0, err := scrape(ctx, r.client, r.schemas)
	if err != nil {
		return nil, err
	}
	cp := []int{r.c.APIServerPID(), r.c.EtcdPID()}
	cp0, err := each(cp, cpuTime)
	if err != nil {
		return nil, err
	}
	ag0, err := cpus(ps.agent)
	if err != nil {
		return nil, err
	}
	rt0, err := cpus(ps.runtime)
	if err != nil {
		return nil, err
	}
	sleepCtx(ctx, r.o.Window)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	a1, err := scrape(ctx, r.client, r.schemas)
	if err != nil {
		return nil, err
	}
	cp1, err := each(cp, cpuTime)
	if err != nil {
		return nil, err
	}
	ag1, err := cpus(ps.agent)
	if err != nil {
		return nil, err
	}
	rt1, err := cpus(ps.runtime)
	if err != nil {
		return nil, err
	}
	wall := a1.at.Sub(a0.at)
	percent := func(d time.Duration, n int) float64 {
		if n == 0 {
			return 0
		}
		return 100 * d.Seconds() / wall.Seconds() / float64(n)
	}
	w := &Window{
		Seconds:             wall.Seconds(),
		APIServerCPUPercent: percent(cp1[0]-cp0[0], 1),
		EtcdCPUPercent:      percent(cp1[1]-cp0[1], 1),
		AgentCPUPercent:     percent(ag1-ag0, len(ps.agent)),
		RuntimeCPUPercent:   percent(rt1-rt0, len(ps.runtime)),
	}
	w.NodeRequestsPerMinute, w.RequestsPerMinute = rates(a0, a1)
	if len(ps.agent) > 0 {
		w.NodeRequestsPerNodeMinute = w.NodeRequestsPerMinute / float64(len(ps.agent))
		if w.Agent, err = memoryOf(ps.agent); err != nil {
			return nil, err
		}
	}
	if len(ps.runtime) > 0 {
		if w.Runtime, err = memoryOf(ps.runtime); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// each applies f to every pid.
func each[T any](pids []int, f func(int) (T, error)) ([]T, error) {
	out := make([]T, len(pids))
	for i, pid := range pids {
		v, err := f(pid)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		out[i] = v
	}
	return out, nil
}

// memoryOf reads the processes' memory and summarises it.
func memoryOf(pids []int) (*Memory, error) {
	mems, err := each(pids, readMemory)
	if err != nil {
		return nil, err
	}
	var rss, anon, pss []float64
	var total float64
	for _, m := range mems {
		rss, anon, pss = append(rss, mib(m.rss)), append(anon, mib(m.anon)), append(pss, mib(m.pss))
		total += mib(m.pss)
	}
	return &Memory{RSS: spread(rss), Anon: spread(anon), PSS: spread(pss), TotalPSSMiB: total}, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func machineInfo() Machine {
	m := Machine{CPUs: runtime.NumCPU()}
	if v, err := kbFields("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemMiB = v[0] >> 20
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
