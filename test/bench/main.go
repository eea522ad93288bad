// Command bench measures minikubelet's pod start latency against the floor
// set by the runtime itself: on a private containerd 2.x it times, for one
// pod with one container, (a) the CRI calls that start such a pod made
// directly (ImageStatus, RunPodSandbox, CreateContainer, StartContainer) and
// (b) minikubelet from the manifest's write to the runtime's
// CONTAINER_STARTED event of the container and to /pods reporting it
// running (startWatch: nothing is polled while the runtime works). Runs of
// (a) and (b) alternate so that drift of the machine hits both alike. It
// prints medians, p90 and their ratio. Then
// (each part can be skipped with its flag) it times manifest edits, the
// agent's idle cost, one call of /stats/summary, /metrics/cadvisor and
// /metrics/resource with 100 running pods (stats.go), the PLEG modes, and
// the time from a memory eviction threshold crossed to the pod killed
// (evict.go). Last (-cluster), it starts the one-node cluster of
// test/cluster once with minikubelet and once with the kubelet and
// measures pods created in the API to Running and the node's apiserver
// requests (nodeapi.go), then, through the apiserver with kubectl, exec
// round trips, port-forward throughput and the agent's memory per open
// exec stream (cluster.go).
//
//	go run ./test/bench -bed /var/cache/minikubelet/bed.json -bin bin/minikubelet -runs 15
//	go run ./test/bench -standalone=false -cluster-exec-runs 10   # only the cluster part
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
	"github.com/minikubelet/minikubelet/test/freeport"
)

func main() {
	bedPath := flag.String("bed", "/var/cache/minikubelet/bed.json", "bed.json written by test/scripts/prepare.sh")
	bin := flag.String("bin", "bin/minikubelet", "the minikubelet binary")
	runtimeName := flag.String("runtime", "containerd-2.1", "which runtime of the bed to use")
	runs := flag.Int("runs", 15, "measured runs of each kind (after one warm-up each)")
	windowPods := flag.Int("window-sweep", 0, "only run the experiment behind the agent's window of sandbox starts: this many pods started at once with direct CRI calls, all sandboxes at once and then at most -window-sweep-pars at a time, two rounds (0: off)")
	windowPars := flag.String("window-sweep-pars", "8,4,2", "sandboxes at a time tried by -window-sweep")
	windowHostNet := flag.Bool("window-sweep-host-network", false, "-window-sweep's pods on the node's network instead of bridge CNI")
	polledStart := flag.Bool("start-polled", false, "also time each pod start with /pods polled every 5ms from the manifest's write, in runs of their own (the measure before 2026-12-07: the poll's CPU slows the runtime calls it times)")
	keep := flag.String("keep-log", "", "copy minikubelet's log (at -v=4) to this file")
	writes := flag.Int("config-writes", 100, "manifest edits timed from write to the pod's new version on /pods (0 skips)")
	kills := flag.Int("kills", 30, "containers killed from outside the agent per PLEG mode, timed to /pods showing them terminated and replaced (0 skips)")
	plegCounts := flag.String("pleg-counts", "0,30,110", "running pod counts at which the agent's CPU time and RSS are measured in each PLEG mode (empty skips)")
	cpuFor := flag.Duration("cpu-for", time.Minute, "how long each steady-state CPU measurement lasts")
	batches := flag.String("batches", "30,110", "pod counts written to the manifest directory at once, timed to all Running (empty skips)")
	graceKills := flag.Int("grace-kills", 5, "containers that ignore SIGTERM deleted with a 2s grace, timed from the grace deadline to their death (0 skips)")
	jsonOut := flag.String("json", "bench-report.json", "where the report's JSON goes")
	plotOut := flag.String("plot", "bench-plot.png", "where the PNG plot of latency, CPU and RSS against pod count goes")
	idlePods := flag.Int("idle-pods", 50, "static pods to run while the agent's idle CPU time is measured (0 skips)")
	idleFor := flag.Duration("idle-for", 60*time.Second, "how long idle CPU time is measured")
	profile := flag.String("probe-cpuprofile", "", "write a 30s CPU profile of the agent taken during the probe measurement to this file")
	probePods := flag.Int("probe-pods", 100, "running pods, each with an exec liveness and an httpGet readiness probe every 10s, while the agent's CPU time is measured for a minute (0 skips)")
	statsPods := flag.Int("stats-pods", 100, "running pods (bridge network) while /stats/summary, /metrics/cadvisor and /metrics/resource are timed (0 skips)")
	statsCalls := flag.Int("stats-calls", 10, "timed calls of each stats endpoint")
	statsProfile := flag.String("stats-cpuprofile", "", "after the timed stats calls, write CPU profiles of the agent over 30s of fresh reads to PREFIX.summary-cadvisor.pprof (the two alternating, each read afresh), PREFIX.resource.pprof and PREFIX.cadvisor.pprof (each read past the snapshot's age, as a scraper reads)")
	evictions := flag.Int("evictions", 5, "BestEffort pods allocating memory fast past a memory.available threshold, timed from the threshold crossed to the pod killed, with memory notifications on (0 skips)")
	evictionsPolling := flag.Int("evictions-polling", 2, "the same with memory notifications off: the 10s monitoring period alone (0 skips)")
	standalone := flag.Bool("standalone", true, "run the standalone part (every figure above); false runs only the cluster part")
	clusterOn := flag.Bool("cluster", true, "run the cluster part, minikubelet and the kubelet side by side in the one-node cluster (needs -cluster-json): pods created in the API to Running and the node's apiserver requests; exec, port-forward and memory per exec stream through the apiserver")
	binsPath := flag.String("cluster-json", "/var/cache/minikubelet/cluster.json", "cluster.json written by test/scripts/prepare-cluster.sh (make prepare-cluster)")
	execRuns := flag.Int("cluster-exec-runs", 50, "timed runs of kubectl exec POD -- true per agent")
	transferMiB := flag.Int("cluster-transfer-mib", 256, "MiB read through kubectl port-forward per transfer")
	pfRuns := flag.Int("cluster-transfers", 3, "timed port-forward transfers per agent (the median is reported)")
	streams := flag.Int("cluster-streams", 20, "concurrent streams of kubectl exec -i POD -- cat open while the agent's RSS is read")
	rounds := flag.Int("cluster-rounds", 2, "clusters started per agent, the agents alternating; the samples of all rounds are pooled")
	clusterProfiles := flag.String("cluster-profiles", "", "a directory for each agent's profiles: CPU over the transfers and the batch, the heap with the streams open and with the batch all Running")
	clusterLogs := flag.String("cluster-logs", "", "a directory for the cluster components' logs, per agent")
	clusterStreaming := flag.Bool("cluster-streaming", true, "run the cluster part's streaming figures (exec, port-forward, memory per exec stream)")
	clusterNode := flag.Bool("cluster-node", true, "run the cluster part's node figures: pods created in the API to Running, and the node's apiserver requests counted in the apiserver's audit log")
	steadyPods := flag.Int("cluster-steady-pods", 3, "pods running while the node's requests per minute are counted (they stay for the rest of the round)")
	steadyFor := flag.Duration("cluster-steady-for", 5*time.Minute, "how long the node's requests per minute are counted at steady state, per round")
	seqPods := flag.Int("cluster-seq-pods", 20, "pods created one at a time (each waited for Running, deleted and waited for gone)")
	batchPods := flag.Int("cluster-batch-pods", 50, "pods created at once, per round")
	batchSettle := flag.Duration("cluster-batch-settle", time.Minute, "how long a batch runs, once all Running, before the agent's settled RSS is read (0: not read)")
	clusterTrace := flag.Bool("cluster-trace", false, "print when each pod of the node part was seen created and Running, to read beside the agents' logs (-cluster-logs)")
	releaseMemcgs := flag.Int("release-memcgs", -1, "before the run and each of its parts, drop the page cache if the kernel holds more than this many dying memory cgroups (suspected of slowing the runtime; -1 never does)")
	replot := flag.String("replot", "", "only draw the plot (-plot) of this report JSON, written by an earlier run")
	flag.Parse()
	if *replot != "" {
		if err := replotReport(*replot, *plotOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	opts := options{runs: *runs, polled: *polledStart, windowPods: *windowPods, windowPars: counts(*windowPars), windowHostNet: *windowHostNet, keepLog: *keep, writes: *writes, idlePods: *idlePods, idleFor: *idleFor, kills: *kills, plegCounts: counts(*plegCounts), cpuFor: *cpuFor,
		probePods: *probePods, probeProfile: *profile, statsPods: *statsPods, statsCalls: *statsCalls, statsProfile: *statsProfile,
		batches: counts(*batches), graceKills: *graceKills, jsonOut: *jsonOut, plotOut: *plotOut, evictions: *evictions, evictionsPolling: *evictionsPolling, releaseMemcgs: *releaseMemcgs}
	copts := clusterOptions{binsPath: *binsPath, execRuns: *execRuns, transferMiB: *transferMiB, pfRuns: *pfRuns, streams: *streams, rounds: *rounds,
		profileDir: *clusterProfiles, keepLogs: *clusterLogs, streaming: *clusterStreaming, nodeOn: *clusterNode,
		node: nodeOptions{steadyPods: *steadyPods, steadyFor: *steadyFor, seqPods: *seqPods, batchPods: *batchPods, batchSettle: *batchSettle, trace: *clusterTrace}}
	if opts.windowPods > 0 {
		*clusterOn, *standalone = false, true
	}
	if err := benchAll(*bedPath, *bin, *runtimeName, *standalone, *clusterOn, opts, copts); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// benchAll runs the standalone part, then the cluster part, as asked, and
// writes the report of what ran (also when a part failed).
func benchAll(bedPath, bin, runtimeName string, standalone, clusterOn bool, o options, co clusterOptions) (err error) {
	if clusterOn {
		if err := checkCluster(co); err != nil {
			return err
		}
	}
	rep := &report{When: time.Now().UTC(), Machine: describeMachine()}
	if rep.Machine.DyingMemcgs, err = checkMemcgs(o.releaseMemcgs, false); err != nil {
		return err
	}
	if st, err := os.Stat(bin); err == nil {
		rep.BinaryBytes = st.Size()
		fmt.Printf("agent binary: %s, %.1f MB\n", bin, float64(st.Size())/1e6)
	}
	defer func() {
		if err := rep.write(o.jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench: report:", err)
		}
		if err := rep.plot(o.plotOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench: plot:", err)
		}
		fmt.Printf("report: %s   plot: %s\n", o.jsonOut, o.plotOut)
	}()
	if standalone {
		if err := run(bedPath, bin, runtimeName, o, rep); err != nil {
			return err
		}
	}
	if clusterOn {
		return clusterBench(context.Background(), bedPath, bin, co, rep)
	}
	return nil
}

// checkCluster says what is missing for the cluster part, before anything
// runs, and how to get it or skip the part.
func checkCluster(co clusterOptions) error {
	if _, err := os.Stat(co.binsPath); err != nil {
		return fmt.Errorf("the cluster part needs the cluster cache: %w; build it with `make prepare-cluster` (test/scripts/prepare-cluster.sh), or skip the part with -cluster=false", err)
	}
	if co.nodeOn && (co.node.seqPods < 1 || co.node.batchPods < 1 || co.node.steadyFor <= 0 || co.node.steadyPods < 0) {
		return fmt.Errorf("-cluster-seq-pods %d, -cluster-batch-pods %d, -cluster-steady-for %v, -cluster-steady-pods %d: the pod counts and the time must be at least 1 (steady pods may be 0)", co.node.seqPods, co.node.batchPods, co.node.steadyFor, co.node.steadyPods)
	}
	if !co.nodeOn && !co.streaming {
		return fmt.Errorf("-cluster-node=false and -cluster-streaming=false leave nothing to the cluster part: skip it with -cluster=false")
	}
	if co.execRuns < 1 || co.pfRuns < 1 || co.transferMiB < 1 || co.streams < 1 || co.rounds < 1 {
		return fmt.Errorf("-cluster-exec-runs %d, -cluster-transfers %d, -cluster-transfer-mib %d, -cluster-streams %d, -cluster-rounds %d: each must be at least 1", co.execRuns, co.pfRuns, co.transferMiB, co.streams, co.rounds)
	}
	if co.profileDir != "" {
		return os.MkdirAll(co.profileDir, 0o755)
	}
	return nil
}

type options struct {
	runs int
	// polled: the pod start is also timed with /pods polled from the
	// write (see agentProc.start).
	polled bool
	// windowPods, windowPars, windowHostNet: the -window-sweep
	// experiment (windowsweep.go), run instead of everything else.
	windowPods    int
	windowPars    []int
	windowHostNet bool
	keepLog       string
	writes        int
	idlePods      int
	idleFor       time.Duration
	kills         int
	// plegCounts are the pod counts of the steady-state measurements,
	// each lasting cpuFor.
	plegCounts []int
	cpuFor     time.Duration
	batches    []int
	graceKills int
	jsonOut    string
	plotOut    string
	probePods  int
	// releaseMemcgs: the dying memory cgroups above which the page cache
	// is dropped before the run (checkMemcgs).
	releaseMemcgs int
	// probeProfile, if set, receives a CPU profile of the probe run.
	probeProfile string
	// statsPods pods run while each stats endpoint is called statsCalls
	// times.
	statsPods  int
	statsCalls int
	// statsProfile, if set, is the prefix of the stats profiles.
	statsProfile string
	// evictions and evictionsPolling are the memory evictions timed with
	// notifications on and off.
	evictions, evictionsPolling int
}

func run(bedPath, bin, runtimeName string, o options, rep *report) error {
	runs, keepLog := o.runs, o.keepLog
	bed, err := ctrdtest.LoadBed(bedPath)
	if err != nil {
		return err
	}
	rtSpec, err := bed.Runtime(runtimeName)
	if err != nil {
		return err
	}
	busybox, err := bed.Image(ctrdtest.RoleBusybox)
	if err != nil {
		return err
	}
	base, err := os.MkdirTemp("", "minikubelet-bench.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	ctx := context.Background()
	// The raw calls get the agent's (and the kubelet's) CRI timeout: in a
	// raw batch of 110 at once on a slow day, a RunPodSandbox took longer
	// than ctrdtest's 30s.
	rt, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rtSpec, Bed: bed, BaseDir: base, CRITimeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	defer func() {
		if err := rt.Stop(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop containerd:", err)
		}
	}()

	var extra []string
	if keepLog != "" {
		extra = append(extra, "-v=4")
	}
	a, err := startAgent(bin, rt, base, "bench", extra...)
	if err != nil {
		return err
	}
	defer a.stop()
	a.trace = keepLog != ""
	if keepLog != "" {
		defer func() {
			a.stop()
			if b, err := os.ReadFile(filepath.Join(base, "bench", "minikubelet.log")); err == nil {
				_ = os.WriteFile(keepLog, b, 0o644)
			}
		}()
	}

	if o.windowPods > 0 {
		network, what := runtimeapi.NamespaceMode_POD, "bridge CNI"
		if o.windowHostNet {
			network, what = runtimeapi.NamespaceMode_NODE, "host network"
		}
		fmt.Printf("raw CRI calls, %d pods (%s) at once with at most N sandboxes made at a time, N in %v\n", o.windowPods, what, append([]int{o.windowPods}, o.windowPars...))
		return windowSweep(ctx, rt, busybox.Ref, base, o.windowPods, network, append([]int{o.windowPods}, o.windowPars...), 2)
	}
	rep.Runtime = rt.Name()
	w, err := watchStarts(ctx, rt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v: pod start is timed on /pods polled every %v from the write, and not in CRI\n", err, pollInterval)
	} else {
		defer w.close()
	}
	var raw, agent, outside, rawPolled, polled []time.Duration
	for i := 0; i <= runs; i++ { // run 0 warms caches and is not counted
		r, err := rawStart(ctx, rt, busybox.Ref, base, i, a.trace)
		if err != nil {
			return fmt.Errorf("raw CRI run %d: %w", i, err)
		}
		m, c, err := a.start(ctx, rt, busybox.Ref, i, w, false)
		if err != nil {
			return fmt.Errorf("minikubelet run %d: %w", i, err)
		}
		var rp, p time.Duration
		if o.polled {
			stop := a.pollPods()
			rp, err = rawStart(ctx, rt, busybox.Ref, base, i+runs+1, a.trace)
			stop()
			if err != nil {
				return fmt.Errorf("raw CRI run %d, /pods polled alongside: %w", i, err)
			}
			if p, _, err = a.start(ctx, rt, busybox.Ref, i, w, true); err != nil {
				return fmt.Errorf("minikubelet run %d, polled: %w", i, err)
			}
		}
		if i > 0 {
			raw, agent = append(raw, r), append(agent, m)
			if w != nil {
				outside = append(outside, c)
			}
			if o.polled {
				rawPolled, polled = append(rawPolled, rp), append(polled, p)
			}
		}
	}
	fmt.Printf("pod start, one pod with one container (bridge CNI), %s, %d runs each\n", rt.Name(), runs)
	fmt.Printf("  %-56s median %7.1f ms   p90 %7.1f ms\n", "raw (pod cgroup+ImageStatus+RunPodSandbox+Create+Start)", ms(median(raw)), ms(pct(raw, 0.9)))
	onPods := "minikubelet (manifest write -> running on /pods)"
	if w == nil {
		onPods = "minikubelet (write -> running on /pods, polled)"
	}
	fmt.Printf("  %-56s median %7.1f ms   p90 %7.1f ms\n", onPods, ms(median(agent)), ms(pct(agent, 0.9)))
	fmt.Printf("  ratio minikubelet/raw (medians): %.2fx   p99 raw %.1f ms, minikubelet %.1f ms\n", float64(median(agent))/float64(median(raw)), ms(pct(raw, 0.99)), ms(pct(agent, 0.99)))
	rep.PodStart = &latencyPair{Raw: summarize(raw), Agent: summarize(agent), Ratio: float64(median(agent)) / float64(median(raw))}
	if w != nil {
		fmt.Printf("  %-56s median %7.1f ms   p90 %7.1f ms\n", "minikubelet from outside (write -> CONTAINER_STARTED)", ms(median(outside)), ms(pct(outside, 0.9)))
		fmt.Printf("  ratio from outside/raw (medians): %.2fx\n", float64(median(outside))/float64(median(raw)))
		rep.PodStartOutside = &latencyPair{Raw: summarize(raw), Agent: summarize(outside), Ratio: float64(median(outside)) / float64(median(raw))}
	}
	if o.polled {
		fmt.Printf("  with /pods polled every %v throughout, in runs of their own:\n", pollInterval)
		fmt.Printf("  %-56s median %7.1f ms   p90 %7.1f ms\n", "raw, /pods polled alongside", ms(median(rawPolled)), ms(pct(rawPolled, 0.9)))
		fmt.Printf("  %-56s median %7.1f ms   p90 %7.1f ms\n", "minikubelet, write -> running on /pods, polled", ms(median(polled)), ms(pct(polled, 0.9)))
		fmt.Printf("  ratio polled/raw polled (medians): %.2fx   polled/raw: %.2fx\n", float64(median(polled))/float64(median(rawPolled)), float64(median(polled))/float64(median(raw)))
		rep.PodStartPolled = &latencyPair{Raw: summarize(rawPolled), Agent: summarize(polled), Ratio: float64(median(polled)) / float64(median(rawPolled))}
	}

	for _, n := range o.batches {
		if _, err := checkMemcgs(o.releaseMemcgs, true); err != nil {
			return err
		}
		rawUp, rawGone, err := rawBatch(ctx, rt, busybox.Ref, base, n)
		if err != nil {
			return err
		}
		up, gone, err := a.batchStart(ctx, rt, busybox.Ref, n)
		if err != nil {
			return fmt.Errorf("batch of %d: %w", n, err)
		}
		b := batch{Pods: n, Ms: ms(up), RawMs: ms(rawUp), Ratio: ms(up) / ms(rawUp), RemoveMs: ms(gone), RawRemoveMs: ms(rawGone), RemoveRatio: ms(gone) / ms(rawGone)}
		fmt.Printf("%d host-network pods at once (each with its pod cgroup), raw CRI calls in parallel / written to the manifest directory at once\n", n)
		fmt.Printf("  start:  raw all started %6.0f ms   minikubelet all Running on /pods %6.0f ms   ratio %.2fx\n", b.RawMs, b.Ms, b.Ratio)
		fmt.Printf("  remove: raw all removed %6.0f ms   minikubelet all gone from the runtime %6.0f ms   ratio %.2fx\n", b.RawRemoveMs, b.RemoveMs, b.RemoveRatio)
		rep.Batches = append(rep.Batches, b)
	}
	if o.graceKills > 0 {
		over, err := a.graceKill(ctx, rt, busybox.Ref, o.graceKills)
		if err != nil {
			return fmt.Errorf("grace kill: %w", err)
		}
		rep.GraceKill = new(latency)
		*rep.GraceKill = summarize(over)
		fmt.Printf("container ignoring SIGTERM, grace 2s: dead after the deadline by median %.0f ms, max %.0f ms (%d runs)\n", ms(median(over)), ms(pct(over, 1)), len(over))
	}

	if o.writes > 0 {
		lat, err := a.configLatency(busybox.Ref, o.writes)
		if err != nil {
			return fmt.Errorf("config latency: %w", err)
		}
		fmt.Printf("manifest edit -> new version on /pods (the syncLoop has handed it to the pod's worker), %d edits\n", len(lat))
		fmt.Printf("  median %7.2f ms   p99 %7.2f ms   (polled every %v)\n", ms(median(lat)), ms(pct(lat, 0.99)), configPoll)
		rep.ConfigEdit = new(latency)
		*rep.ConfigEdit = summarize(lat)
	}
	if o.idlePods > 0 {
		cpu, rss, err := a.idleCost(ctx, rt, busybox.Ref, o.idlePods, o.idleFor)
		if err != nil {
			return fmt.Errorf("idle cost: %w", err)
		}
		fmt.Printf("agent idle with %d running static pods, over %v\n", o.idlePods, o.idleFor)
		fmt.Printf("  CPU %.2f s (%.2f%% of one core)   RSS %.1f MiB\n", cpu.Seconds(), 100*cpu.Seconds()/o.idleFor.Seconds(), float64(rss)/(1<<20))
	}
	if o.statsPods > 0 {
		if err := a.drain(ctx, rt); err != nil {
			return err
		}
		if _, err := checkMemcgs(o.releaseMemcgs, true); err != nil {
			return err
		}
		res, err := a.statsCost(busybox.Ref, o.statsPods, o.statsCalls, o.statsProfile)
		if err != nil {
			return fmt.Errorf("stats cost: %w", err)
		}
		fmt.Printf("stats endpoints with %d running pods (own network), %d calls each, read afresh / from the 1s snapshot\n", o.statsPods, o.statsCalls)
		for _, r := range res {
			fmt.Printf("  %-18s fresh: median %7.1f ms  p90 %7.1f ms  agent CPU %5.1f ms/call   snapshot: median %5.1f ms   %d KiB\n",
				r.path, ms(median(r.fresh)), ms(pct(r.fresh, 0.9)), ms(r.cpu)/float64(len(r.fresh)), ms(median(r.cached)), r.bytes/1024)
			rep.Stats = append(rep.Stats, statsEndpoint{Path: r.path, Pods: o.statsPods, Fresh: summarize(r.fresh),
				CPUMsPerFreshCall: ms(r.cpu) / float64(len(r.fresh)), Cached: summarize(r.cached), Bytes: r.bytes})
		}
	}
	if o.kills > 0 || len(o.plegCounts) > 0 {
		if err := a.drain(ctx, rt); err != nil {
			return err
		}
		a.stop()
		if _, err := checkMemcgs(o.releaseMemcgs, true); err != nil {
			return err
		}
		if err := plegBench(ctx, bin, rt, busybox.Ref, base, o, rep); err != nil {
			return fmt.Errorf("pleg: %w", err)
		}
	}
	if o.evictions > 0 || o.evictionsPolling > 0 {
		if err := a.drain(ctx, rt); err != nil {
			return err
		}
		a.stop()
		if _, err := checkMemcgs(o.releaseMemcgs, true); err != nil {
			return err
		}
		if err := evictBench(ctx, bin, rt, busybox.Ref, base, o.evictions, o.evictionsPolling, rep); err != nil {
			return err
		}
	}
	if o.probePods > 0 {
		probe, err := bed.Image(ctrdtest.RoleProbe)
		if err != nil {
			return err
		}
		if _, err := checkMemcgs(o.releaseMemcgs, true); err != nil {
			return err
		}
		if err := probeBench(ctx, bin, rt, probe.Ref, base, o.probePods, o.probeProfile, rep); err != nil {
			return fmt.Errorf("probes: %w", err)
		}
	}
	return nil
}

// probeBench measures the agent's CPU time per minute and RSS with n pods
// that each carry an exec liveness and an httpGet readiness probe every
// 10s (evented PLEG), and how many probes ran meanwhile.
func probeBench(ctx context.Context, bin string, rt *ctrdtest.Containerd, image, base string, n int, profile string, rep *report) error {
	a, err := startAgent(bin, rt, base, "probes", "--pleg-mode", "evented")
	if err != nil {
		return err
	}
	defer a.stop()
	a.profile = profile
	before := a.probeRuns()
	cpu, rss, err := a.steadyCost(n, time.Minute, probedPod(image))
	if err != nil {
		return err
	}
	runs := a.probeRuns() - before
	fmt.Printf("agent with %d running pods, each with an exec liveness and an httpGet readiness probe every 10s (evented), per minute\n", n)
	fmt.Printf("  CPU %.2f s/min (%.2f%% of one core)   RSS %.1f MiB   probes run since start: %d\n", cpu.Seconds(), 100*cpu.Seconds()/60, float64(rss)/(1<<20), runs)
	rep.Probes = &steady{Mode: "evented", Pods: n, CPUPercent: 100 * cpu.Seconds() / 60, RSSMiB: float64(rss) / (1 << 20), AnonMiB: float64(a.anon) / (1 << 20)}
	return a.drain(ctx, rt)
}

// saveProfile writes a CPU profile of the agent over d to path, taken
// through its socket (the read-only port serves no pprof).
func (a *agentProc) saveProfile(path string, d time.Duration) {
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "unix", a.socket)
	}}}
	resp, err := c.Get(fmt.Sprintf("http://agent/debug/pprof/profile?seconds=%d", int(d.Seconds()))) //nolint:noctx // the agent's own socket
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "bench: profile: HTTP %d: %s\n", resp.StatusCode, b)
		return
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
	}
}

// probeRuns sums minikubelet_prober_probe_total from /metrics.
func (a *agentProc) probeRuns() int {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", a.port)) //nolint:noctx // the agent's own port
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "minikubelet_prober_probe_total{") {
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				total += int(v)
			}
		}
	}
	return total
}

// drain removes every manifest and waits until the runtime holds no
// sandbox of the agent's node.
func (a *agentProc) drain(ctx context.Context, rt *ctrdtest.Containerd) error {
	entries, err := os.ReadDir(a.manifest)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(a.manifest, e.Name())); err != nil {
			return err
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		sandboxes, err := rt.Runtime().ListPodSandbox(ctx, nil)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(sandboxes, func(sb *runtimeapi.PodSandbox) bool {
			return strings.HasSuffix(sb.GetMetadata().GetName(), "-"+a.node)
		}) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods of %s still in the runtime 2 minutes after their manifests were removed", a.node)
		}
	}
}

// rawStart makes the pod cgroup and the CRI calls that start a
// one-container pod, times them, then removes the pod (untimed). The
// sandbox asks for the runtime's default seccomp profile, as every
// sandbox of the kubelet and of minikubelet does (see newRawPod).
//
// With trace, it prints how long each step took, to read beside the
// agent's log of its own pods (-keep-log).
func rawStart(ctx context.Context, rt *ctrdtest.Containerd, image, base string, i int, trace bool) (time.Duration, error) {
	p, err := newRawPod(base, "raw-"+strconv.Itoa(i), fmt.Sprintf("bench-raw-%d-%d", os.Getpid(), i), runtimeapi.NamespaceMode_POD)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	// What every pod must have: its own cgroup (the agent's pods have
	// theirs, with QoS parents).
	cg, rmCgroup, err := rawCgroup(rt.CgroupParent(), "raw-"+p.sandbox.Metadata.Uid)
	if err != nil {
		return 0, err
	}
	defer rmCgroup()
	p.sandbox.Linux.CgroupParent = cg
	cgroupAt := time.Now()
	imageID, err := rawImageID(ctx, rt, image)
	if err != nil {
		return 0, err
	}
	sandboxFrom := time.Now()
	sb, err := rt.Runtime().RunPodSandbox(ctx, p.sandbox, "")
	if err != nil {
		return 0, err
	}
	sandboxAt := time.Now()
	defer func() {
		_ = rt.Runtime().StopPodSandbox(ctx, sb)
		_ = rt.Runtime().RemovePodSandbox(ctx, sb)
	}()
	id, err := rt.Runtime().CreateContainer(ctx, sb, p.container(imageID, image, 0), p.sandbox)
	if err != nil {
		return 0, err
	}
	createdAt := time.Now()
	if err := rt.Runtime().StartContainer(ctx, id); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if trace {
		fmt.Printf("bench: raw-%d cgroup %.1f ms, ImageStatus %.1f, RunPodSandbox %.1f, CreateContainer %.1f, StartContainer %.1f, all %.1f\n", i,
			ms(cgroupAt.Sub(start)), ms(sandboxFrom.Sub(cgroupAt)), ms(sandboxAt.Sub(sandboxFrom)), ms(createdAt.Sub(sandboxAt)), ms(start.Add(took).Sub(createdAt)), ms(took))
	}
	return took, nil
}

// pollInterval is how often /pods is read while waiting for a pod: often
// enough that it adds little to the figure, rarely enough that serving it
// does not slow the agent down (1ms polling measurably did).
const pollInterval = 5 * time.Millisecond

// tailPoll is how often /pods is read once the runtime has said the
// container runs: only the agent's status update is left to time then.
const tailPoll = time.Millisecond

type agentProc struct {
	// trace prints when each manifest was written and seen running.
	trace    bool
	cmd      *exec.Cmd
	manifest string
	port     int
	// profile, if set, is where steadyCost saves a CPU profile.
	profile string
	// socket is its --socket, which serves /debug/pprof/.
	socket string
	node   string
	// cgroupRoot is its --cgroup-root.
	cgroupRoot string
	// anon is the agent's anonymous resident memory (RssAnon: heap,
	// stacks) at the end of the last steadyCost; RSS also counts the pages
	// of its binary it has touched, which are shared and reclaimable.
	anon int64
}

func startAgent(bin string, rt *ctrdtest.Containerd, base, node string, extraArgs ...string) (*agentProc, error) {
	base = filepath.Join(base, node)
	a := &agentProc{manifest: filepath.Join(base, "manifests"), node: node, cgroupRoot: rt.CgroupParent() + "/" + node, socket: filepath.Join(base, "mk.sock")}
	if err := os.MkdirAll(a.manifest, 0o755); err != nil {
		return nil, err
	}
	var err error
	if a.port, err = freeport.Pick(); err != nil {
		return nil, err
	}
	healthz, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(base, "minikubelet.log"))
	if err != nil {
		return nil, err
	}
	if err := dropFromPageCache(bin); err != nil {
		return nil, err
	}
	a.cmd = exec.Command(bin,
		"--pod-manifest-path", a.manifest,
		"--container-runtime-endpoint", rt.Endpoint(),
		"--root-dir", filepath.Join(base, "root"),
		"--pod-logs-dir", filepath.Join(base, "logs"),
		"--hostname-override", a.node,
		"--read-only-port", strconv.Itoa(a.port),
		"--healthz-port", strconv.Itoa(healthz),
		"--cgroup-root", a.cgroupRoot,
		// Not the system's socket: another agent (another bench part, or
		// another bench) may serve it.
		"--socket", a.socket)
	a.cmd.Args = append(a.cmd.Args, extraArgs...)
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := a.pods(); err == nil {
			return a, nil
		}
		if time.Now().After(deadline) {
			a.stop()
			b, _ := os.ReadFile(filepath.Join(base, "minikubelet.log"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			return nil, fmt.Errorf("minikubelet did not serve /pods within 30s; its last lines:\n%s", strings.Join(lines[max(0, len(lines)-5):], "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (a *agentProc) stop() {
	if a.cmd.ProcessState != nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	_ = a.cmd.Wait()
}

// start writes the manifest of a pod of one container and times it from
// the write to running on /pods. With w, it also times the write to the
// runtime's CONTAINER_STARTED event of the container (inCRI, seen from
// outside the agent), and reads /pods only from that event on: nothing is
// polled while the runtime starts the pod (see startWatch), and /pods,
// which cannot show the container running before the runtime does, is read
// every tailPoll to time the agent's own status update closely. Without w
// (or with polled) /pods is read every pollInterval from the write, as
// before 2026-12-07, and inCRI is 0. It then removes the pod and waits for
// its sandbox to go.
func (a *agentProc) start(ctx context.Context, rt *ctrdtest.Containerd, image string, i int, w *startWatch, polled bool) (onPods, inCRI time.Duration, err error) {
	name := "bench-" + strconv.Itoa(i)
	if polled {
		name = "bench-polled-" + strconv.Itoa(i)
	}
	podName := name + "-" + a.node
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", name, image)
	tmp := filepath.Join(a.manifest, "."+name+".tmp")
	final := filepath.Join(a.manifest, name+".yaml")
	if err := os.WriteFile(tmp, []byte(manifest), 0o644); err != nil {
		return 0, 0, err
	}
	var started <-chan time.Time
	if w != nil && !polled {
		started = w.expect(podName)
		defer w.forget(podName)
	}
	start := time.Now()
	if err := os.Rename(tmp, final); err != nil {
		return 0, 0, err
	}
	deadline := start.Add(60 * time.Second)
	poll := pollInterval
	if started != nil {
		select {
		case at := <-started:
			inCRI = at.Sub(start)
		case <-time.After(time.Until(deadline)):
			return 0, 0, fmt.Errorf("%s: no CONTAINER_STARTED event within 60s", podName)
		}
		poll = tailPoll
	}
	for ; ; time.Sleep(poll) {
		if pods, err := a.pods(); err == nil && running(pods, podName) {
			onPods = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%s not running on /pods within 60s", podName)
		}
	}
	if a.trace {
		fmt.Fprintf(os.Stderr, "bench: %s written %s, running in CRI +%.1f ms, on /pods +%.1f ms\n", name, start.Format("15:04:05.000000"), ms(inCRI), ms(onPods))
	}
	if err := os.Remove(final); err != nil {
		return 0, 0, err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sandboxes, err := rt.Runtime().ListPodSandbox(ctx, nil)
		if err != nil {
			return 0, 0, err
		}
		if !slices.ContainsFunc(sandboxes, func(sb *runtimeapi.PodSandbox) bool { return sb.GetMetadata().GetName() == podName }) {
			return onPods, inCRI, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%s not removed within 60s of its manifest", podName)
		}
	}
}

// pollPods reads /pods every pollInterval, as a.start does with polled,
// until the returned func is called.
func (a *agentProc) pollPods() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, _ = a.pods()
			select {
			case <-quit:
				return
			case <-time.After(pollInterval):
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (a *agentProc) pods() ([]v1.Pod, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(a.port) + "/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var list v1.PodList
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func running(pods []v1.Pod, name string) bool {
	for _, p := range pods {
		if p.Name == name {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		}
	}
	return false
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

// pct returns the p-th quantile (nearest rank) of d.
func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p*float64(len(s)) + 0.5)
	if i >= len(s) {
		i = len(s) - 1
	}
	if i > 0 && p == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// configPoll is how often /pods is read while timing a manifest edit.
const configPoll = time.Millisecond

// configLatency edits one pod's manifest n times (a label change, which
// restarts nothing) and times each write until /pods shows the new label.
func (a *agentProc) configLatency(image string, n int) ([]time.Duration, error) {
	const name = "edited"
	write := func(rev int) error {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels:\n    rev: \"%d\"\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", name, rev, image)
		tmp := filepath.Join(a.manifest, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(m), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(a.manifest, name+".yaml"))
	}
	seen := func(rev int) (bool, error) {
		pods, err := a.pods()
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if p.Name == name+"-"+a.node {
				return p.Labels["rev"] == strconv.Itoa(rev), nil
			}
		}
		return false, nil
	}
	var out []time.Duration
	for rev := 0; rev <= n; rev++ { // rev 0 creates the pod and is not counted
		start := time.Now()
		if err := write(rev); err != nil {
			return nil, err
		}
		for deadline := start.Add(30 * time.Second); ; time.Sleep(configPoll) {
			ok, err := seen(rev)
			if err != nil {
				return nil, err
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("edit %d not on /pods within 30s", rev)
			}
		}
		if rev > 0 {
			out = append(out, time.Since(start))
		}
	}
	return out, os.Remove(filepath.Join(a.manifest, name+".yaml"))
}

// idleCost starts n host-network static pods, waits until all run, lets the
// agent settle, and returns the CPU time it used over d and its RSS after.
func (a *agentProc) idleCost(ctx context.Context, rt *ctrdtest.Containerd, image string, n int, d time.Duration) (time.Duration, int64, error) {
	return a.steadyCost(n, d, func(i int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: idle-%d\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", i, image)
	})
}

// probedPod is a pod whose container carries an exec liveness probe and an
// httpGet readiness probe, both every 10s, on the pod network.
func probedPod(image string) func(i int) string {
	return func(i int) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: idle-%d
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %s
    livenessProbe:
      exec: {command: ["/probeserver", "check"]}
      periodSeconds: 10
    readinessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 10
`, i, image)
	}
}

// steadyCost starts n static pods made by manifest, waits until all run
// (and are ready), lets the agent settle, and returns the CPU time it used
// over d and its RSS after.
func (a *agentProc) steadyCost(n int, d time.Duration, manifest func(i int) string) (time.Duration, int64, error) {
	for i := 0; i < n; i++ {
		m := manifest(i)
		if err := os.WriteFile(filepath.Join(a.manifest, fmt.Sprintf("idle-%d.yaml", i)), []byte(m), 0o644); err != nil {
			return 0, 0, err
		}
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pods, err := a.pods()
		if err != nil {
			return 0, 0, err
		}
		up := 0
		for i := range pods {
			if running(pods[i:i+1], pods[i].Name) && podReady(&pods[i]) {
				up++
			}
		}
		if up >= n {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("only %d of %d pods running after 5 minutes", up, n)
		}
	}
	time.Sleep(5 * time.Second) // let the start-up work drain
	before, _, err := procStat(a.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	if a.profile != "" {
		go a.saveProfile(a.profile, 30*time.Second)
	}
	time.Sleep(d)
	after, rss, err := procStat(a.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	if a.anon, err = rssAnon(a.cmd.Process.Pid); err != nil {
		return 0, 0, err
	}
	for i := 0; i < n; i++ {
		_ = os.Remove(filepath.Join(a.manifest, fmt.Sprintf("idle-%d.yaml", i)))
	}
	return after - before, rss, nil
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// procStat returns a process's CPU time (user+system) and resident memory.
func procStat(pid int) (time.Duration, int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which is in parentheses.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	rssPages, _ := strconv.ParseInt(fields[21], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / ticks, rssPages * int64(os.Getpagesize()), nil
}

// rssAnon returns a process's anonymous resident memory.
func rssAnon(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", pid)
}

// plegBench measures, per PLEG mode with an agent of its own: how long
// after a container's process is killed from outside the agent /pods shows
// it terminated (detection) and a replacement running, over o.kills
// containers; and the agent's CPU time per minute with o.plegPods pods.
func plegBench(ctx context.Context, bin string, rt *ctrdtest.Containerd, image, base string, o options, rep *report) error {
	type result struct {
		detect, replace, onPods []time.Duration
		cpu                     map[int]time.Duration
		rss, anon               map[int]int64
	}
	modes := []string{"relist", "evented"}
	results := map[string]*result{}
	var rawDetect, rawReplace []time.Duration
	for _, mode := range modes {
		r := &result{cpu: map[int]time.Duration{}, rss: map[int]int64{}, anon: map[int]int64{}}
		results[mode] = r
		args := []string{"--pleg-mode", mode}
		if o.keepLog != "" {
			args = append(args, "-v=4")
		}
		a, err := startAgent(bin, rt, base, "pleg-"+mode, args...)
		if err != nil {
			return err
		}
		a.trace = o.keepLog != ""
		if o.kills > 0 {
			// The evented agent's kills are timed by the runtime's events
			// and taken in turn with the raw floor's, the figure they are
			// compared with; the relist agent's by /pods, polled.
			var watch *startWatch
			var raw *rawKiller
			if mode == "evented" {
				if watch, err = watchStarts(ctx, rt); err != nil {
					a.stop()
					return err
				}
				if raw, err = newRawKiller(ctx, rt, watch, image, base); err != nil {
					watch.close()
					a.stop()
					return fmt.Errorf("raw CRI death floor: %w", err)
				}
			}
			k, err := a.killLatency(ctx, rt, watch, image, o.kills, raw)
			if raw != nil {
				raw.close()
				watch.close()
			}
			r.detect, r.replace, r.onPods = k.detect, k.replace, k.onPods
			if raw != nil {
				rawDetect, rawReplace = k.rawDetect, k.rawReplace
			}
			if err != nil {
				a.stop()
				return fmt.Errorf("%s mode: %w", mode, err)
			}
			if err := a.drain(ctx, rt); err != nil {
				a.stop()
				return err
			}
		}
		for _, n := range o.plegCounts {
			r.cpu[n], r.rss[n], err = a.idleCost(ctx, rt, image, n, o.cpuFor)
			if err != nil {
				a.stop()
				return fmt.Errorf("%s mode, %d pods: %w", mode, n, err)
			}
			r.anon[n] = a.anon
			if err := a.drain(ctx, rt); err != nil {
				a.stop()
				return err
			}
		}
		a.stop()
		if o.keepLog != "" {
			if b, err := os.ReadFile(filepath.Join(base, "pleg-"+mode, "minikubelet.log")); err == nil {
				_ = os.WriteFile(o.keepLog+"."+mode, b, 0o644)
			}
		}
	}
	if o.kills > 0 {
		fmt.Printf("container killed from outside, %d kills per mode; the raw calls' kills taken in turn with the evented agent's\n", o.kills)
		fmt.Printf("  timed by the runtime's events, nothing polled:\n")
		fmt.Printf("  %-8s STOPPED event: median %7.1f ms  p99 %7.1f ms   replacement STARTED: median %7.1f ms  p99 %7.1f ms\n",
			"raw CRI", ms(median(rawDetect)), ms(pct(rawDetect, 0.99)), ms(median(rawReplace)), ms(pct(rawReplace, 0.99)))
		rep.Death = append(rep.Death, death{Mode: "raw CRI (event, create, start)", Detect: summarize(rawDetect), Replace: summarize(rawReplace)})
		for _, mode := range modes {
			r := results[mode]
			if mode == "evented" {
				fmt.Printf("  %-8s STOPPED event: median %7.1f ms  p99 %7.1f ms   replacement STARTED: median %7.1f ms  p99 %7.1f ms   running on /pods: median %7.1f ms\n",
					mode, ms(median(r.detect)), ms(pct(r.detect, 0.99)), ms(median(r.replace)), ms(pct(r.replace, 0.99)), ms(median(r.onPods)))
				if len(rawReplace) > 0 {
					fmt.Printf("  ratio evented/raw replacement STARTED (medians): %.2fx\n", float64(median(r.replace))/float64(median(rawReplace)))
				}
			} else {
				fmt.Printf("  timed by /pods, polled every %v:\n", pollInterval)
				fmt.Printf("  %-8s terminated: median %7.1f ms  p99 %7.1f ms   replacement running: median %7.1f ms  p99 %7.1f ms\n",
					mode, ms(median(r.detect)), ms(pct(r.detect, 0.99)), ms(median(r.replace)), ms(pct(r.replace, 0.99)))
			}
			rep.Death = append(rep.Death, death{Mode: mode, Detect: summarize(r.detect), Replace: summarize(r.replace), OnPods: summarize(r.onPods)})
		}
	}
	if len(o.plegCounts) > 0 {
		fmt.Printf("agent at steady state, measured over %v\n", o.cpuFor)
		for _, mode := range modes {
			r := results[mode]
			for _, n := range o.plegCounts {
				pctCPU := 100 * r.cpu[n].Seconds() / o.cpuFor.Seconds()
				fmt.Printf("  %-8s %3d pods: CPU %5.2f s/min (%5.2f%% of one core)   RSS %5.1f MiB (anonymous %5.1f MiB)\n", mode, n, r.cpu[n].Seconds()*60/o.cpuFor.Seconds(), pctCPU, float64(r.rss[n])/(1<<20), float64(r.anon[n])/(1<<20))
				rep.Steady = append(rep.Steady, steady{Mode: mode, Pods: n, CPUPercent: pctCPU, RSSMiB: float64(r.rss[n]) / (1 << 20), AnonMiB: float64(r.anon[n]) / (1 << 20)})
			}
		}
	}
	return nil
}

// counts parses a comma-separated list of pod counts.
func counts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	return out
}

// startVictims runs n host-network pods to kill, and waits until all run.
func (a *agentProc) startVictims(image string, n int) error {
	for i := 0; i < n; i++ {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: victim-%d\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", i, image)
		if err := os.WriteFile(filepath.Join(a.manifest, fmt.Sprintf("victim-%d.yaml", i)), []byte(m), 0o644); err != nil {
			return err
		}
	}
	// Measure at steady state: every victim runs before the first kill.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		pods, err := a.pods()
		if err != nil {
			return err
		}
		up := 0
		for i := range pods {
			if running(pods[i:i+1], pods[i].Name) && podReady(&pods[i]) {
				up++
			}
		}
		if up >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d victims running after 5 minutes", up, n)
		}
	}
}

// killVictim SIGKILLs victim i's container process (as the OOM killer or a
// crash would, outside the agent) at a random moment of the next second.
// With watch, the kill is timed by the runtime's events, with nothing
// polled meanwhile: to the container's CONTAINER_STOPPED (detect) and to
// its replacement's CONTAINER_STARTED (replace); then /pods is read until
// it shows the replacement running (onPods). Without, /pods is polled
// from the kill: detect is when it shows the container terminated, and
// replace and onPods when it shows the replacement running.
func (a *agentProc) killVictim(ctx context.Context, rt *ctrdtest.Containerd, watch *startWatch, i int) (detect, replace, onPods time.Duration, err error) {
	name := fmt.Sprintf("victim-%d-%s", i, a.node)
	var id string
	for deadline := time.Now().Add(2 * time.Minute); id == ""; time.Sleep(50 * time.Millisecond) {
		pods, err := a.pods()
		if err != nil {
			return 0, 0, 0, err
		}
		for _, p := range pods {
			if p.Name == name && running([]v1.Pod{p}, name) {
				id = strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
			}
		}
		if time.Now().After(deadline) {
			return 0, 0, 0, fmt.Errorf("%s not running", name)
		}
	}
	pid, err := rt.ContainerPID(ctx, id)
	if err != nil {
		return 0, 0, 0, err
	}
	// Kill at a random phase of the relist period, not right after the
	// relist that reported the previous replacement.
	time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
	var stopped, started <-chan time.Time
	if watch != nil {
		stopped = watch.expectEvent(name, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		started = watch.expect(name)
	}
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		if watch != nil {
			watch.forget(name)
		}
		return 0, 0, 0, fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	if watch != nil {
		at, err := watch.await(name, stopped, "CONTAINER_STOPPED", eventWait)
		if err != nil {
			return 0, 0, 0, err
		}
		detect = at.Sub(start)
		if at, err = watch.await(name, started, "CONTAINER_STARTED", eventWait); err != nil {
			return 0, 0, 0, err
		}
		replace = at.Sub(start)
	}
	for deadline := start.Add(30 * time.Second); ; time.Sleep(pollInterval) {
		pods, err := a.pods()
		if err != nil {
			return 0, 0, 0, err
		}
		gone, replaced := false, false
		for _, p := range pods {
			if p.Name != name || len(p.Status.ContainerStatuses) != 1 {
				continue
			}
			cs := p.Status.ContainerStatuses[0]
			cur := strings.TrimPrefix(cs.ContainerID, "containerd://")
			gone = cur != id || cs.State.Running == nil
			replaced = cur != id && cs.State.Running != nil
		}
		if gone && detect == 0 {
			detect = time.Since(start)
			if a.trace {
				fmt.Fprintf(os.Stderr, "bench: %s (%s) killed %s, terminated on /pods after %v\n", name, id[:12], start.Format("15:04:05.000000"), detect.Round(time.Millisecond))
			}
		}
		if replaced {
			onPods = time.Since(start)
			if replace == 0 {
				replace = onPods
			}
			if a.trace {
				fmt.Fprintf(os.Stderr, "bench: %s (%s) killed %s, STOPPED after %v, replacement started after %v, running on /pods after %v\n", name, id[:12], start.Format("15:04:05.000000"),
					detect.Round(time.Millisecond), replace.Round(time.Millisecond), onPods.Round(time.Millisecond))
			}
			return detect, replace, onPods, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, 0, fmt.Errorf("%s not replaced within 30s of the kill", name)
		}
	}
}

// killLatency runs n victims, then kills each in turn (killVictim). With
// raw, each of the agent's kills is paired with one of raw's on the same
// runtime, taken in turn (which goes first alternates), so that the floor
// and the agent are measured in the same minutes: on this VM the raw
// replacement's median moved from 157 to 210 ms between runs five minutes
// apart (2026-12-08), more than the agent's overhead.
func (a *agentProc) killLatency(ctx context.Context, rt *ctrdtest.Containerd, watch *startWatch, image string, n int, raw *rawKiller) (k kills, err error) {
	if err := a.startVictims(image, n); err != nil {
		return k, err
	}
	killRaw := func() error {
		if raw == nil {
			return nil
		}
		d, r, err := raw.kill(ctx)
		if err != nil {
			return fmt.Errorf("raw CRI death floor: %w", err)
		}
		k.rawDetect, k.rawReplace = append(k.rawDetect, d), append(k.rawReplace, r)
		return nil
	}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			if err := killRaw(); err != nil {
				return k, err
			}
		}
		d, r, p, err := a.killVictim(ctx, rt, watch, i)
		if err != nil {
			return k, err
		}
		k.detect, k.replace, k.onPods = append(k.detect, d), append(k.replace, r), append(k.onPods, p)
		if i%2 == 1 {
			if err := killRaw(); err != nil {
				return k, err
			}
		}
	}
	return k, nil
}

// kills are one agent's kill timings (killVictim) and the raw calls' taken
// in turn with them, if any.
type kills struct {
	detect, replace, onPods []time.Duration
	rawDetect, rawReplace   []time.Duration
}

// dropFromPageCache evicts the binary's pages from the page cache, so that
// the agent reads it as after a reboot. How much of a binary's mapping is
// resident depends on how its pages came into the cache: read ahead on
// faults, they come in large folios that a fault maps whole; written by the
// linker a moment ago, they do not. Without this, the agent's RSS measured
// here depends on whether `make build` just ran.
func dropFromPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	return nil
}
