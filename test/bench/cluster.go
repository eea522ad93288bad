package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/test/cluster"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The cluster part of the bench (issue 18 item 8, issue 21 item 5): the
// one-node cluster of test/cluster, started once with minikubelet and once
// with the kubelet on the same bed containerd, and for each, first the node
// part (nodeapi.go: pods created in the API to Running, the node's
// apiserver requests), then what a user's kubectl sees of the node's
// streaming through the apiserver: `kubectl exec POD -- true` round
// trips, the throughput of one `kubectl port-forward` carrying a large
// transfer, and the agent's memory per open `kubectl exec -i POD -- cat`.
// kubectl is the bed's, of the apiserver's version, with its defaults
// (WebSocket to the apiserver, which speaks SPDY to the node's kubelet
// port), as users run it.

// clusterOptions say how much the cluster part measures.
type clusterOptions struct {
	// binsPath is cluster.json (test/scripts/prepare-cluster.sh).
	binsPath string
	// execRuns timed `kubectl exec -- true`, after one warm-up.
	execRuns int
	// transferMiB is one port-forward transfer's size; pfRuns how many
	// are timed (the median is reported).
	transferMiB int
	pfRuns      int
	// streams open exec streams while the agent's RSS is read.
	streams int
	// rounds: each agent's cluster is started this many times, the agents
	// alternating, and the samples of all rounds pooled, so that the
	// machine's drift (other work on it) hits both alike.
	rounds int
	// profileDir, if set, receives the agents' heap profile (and its
	// text form, with the runtime's MemStats) and goroutine stacks with
	// the streams open, and a CPU profile over the transfers.
	profileDir string
	// keepLogs, if set, receives every component's log, per agent.
	keepLogs string
	// streaming runs the streaming part; node, the node part (nodeapi.go).
	streaming, nodeOn bool
	node              nodeOptions
}

// The bench pod: one busybox container whose main process serves
// transferMiB MiB of zeros to each TCP connection on benchPort (busybox
// nc, one dd per connection), and into which the exec figures exec. It
// requests half a core: a BestEffort pod's cgroup gets cpu.shares 2, and
// on a busy machine its dd and the execs would then measure the other
// work on the machine more than the agent.
const (
	benchPod       = "stream-bench"
	benchContainer = "bytes"
	benchPort      = 8000
	benchImage     = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
)

func benchPodSpec(transferMiB int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: benchPod, Namespace: "default"},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []v1.Container{{
				Name: benchContainer, Image: benchImage,
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}},
				Command: []string{"nc", "-ll", "-p", strconv.Itoa(benchPort), "-e",
					"dd", "if=/dev/zero", "bs=1048576", "count=" + strconv.Itoa(transferMiB)},
			}},
		},
	}
}

// streamFigures is what one agent measured, over every round.
type streamFigures struct {
	Agent  string `json:"agent"`
	Rounds int    `json:"rounds"`
	// Exec is `kubectl exec POD -- true`, process start to exit, in ms.
	Exec latency `json:"execTrue"`
	// PortForwardMiBps is the median throughput of the transfers,
	// PortForwardRuns each one's.
	PortForwardMiBps float64   `json:"portForwardMiBps"`
	PortForwardRuns  []float64 `json:"portForwardRunsMiBps"`
	// AgentCPUPerGiBms is the agent's CPU time per GiB forwarded.
	AgentCPUPerGiBms float64 `json:"agentCPUPerGiBms"`
	// RSS of the agent before the streams and with them open; per
	// stream is their difference over the stream count, and the same of
	// the anonymous part (heap, stacks).
	RSSBeforeMiB float64 `json:"rssBeforeMiB"`
	RSSWithMiB   float64 `json:"rssWithMiB"`
	// (the last round's RSS, the median of the rounds' per stream).
	PerStreamKiB     float64   `json:"rssPerStreamKiB"`
	AnonPerStreamKiB float64   `json:"rssAnonPerStreamKiB"`
	PerStreamRuns    []float64 `json:"rssPerStreamRunsKiB"`
	// DeclaredFeatures is the Node's status.declaredFeatures: with
	// ExtendWebSocketsToKubelet the apiserver passes kubectl's WebSockets
	// through to the agent, without it it speaks SPDY to the agent.
	DeclaredFeatures []string `json:"nodeDeclaredFeatures"`

	// The rounds' samples, summed up by finish.
	exec          []time.Duration
	cpu           time.Duration
	forwardedGiB  float64
	anonPerStream []float64
}

// printRound prints the last round's samples, so that a run cut short
// still tells what it measured.
func (f *streamFigures) printRound(o clusterOptions) {
	exec := f.exec[len(f.exec)-o.execRuns:]
	fmt.Printf("  %s, round %d: exec -- true median %.1f ms, p90 %.1f ms; port-forward %.1f MiB/s (median of %d); RSS per open exec stream %.1f KiB\n",
		f.Agent, f.Rounds, ms(median(exec)), ms(pct(exec, 0.9)), medianFloat(f.PortForwardRuns[len(f.PortForwardRuns)-o.pfRuns:]), o.pfRuns, f.PerStreamRuns[len(f.PerStreamRuns)-1])
}

// finish sums the rounds' samples up into the figures.
func (f *streamFigures) finish() {
	f.Exec = summarize(f.exec)
	f.PortForwardMiBps = medianFloat(f.PortForwardRuns)
	if f.forwardedGiB > 0 {
		f.AgentCPUPerGiBms = ms(f.cpu) / f.forwardedGiB
	}
	f.PerStreamKiB = medianFloat(f.PerStreamRuns)
	f.AnonPerStreamKiB = medianFloat(f.anonPerStream)
}

// clusterReport is the cluster part of the report.
type clusterReport struct {
	KubeVersion string `json:"kubeVersion"`
	Runtime     string `json:"runtime"`
	Client      string `json:"client"`
	ExecRuns    int    `json:"execRuns"`
	TransferMiB int    `json:"transferMiB"`
	Streams     int    `json:"openExecStreams"`
	// Agents: minikubelet, then the kubelet.
	Agents []streamFigures `json:"agents"`
	// Ratios are minikubelet's figure over the kubelet's: below 1 is
	// better for exec and memory, above 1 for port-forward.
	Ratios streamRatios `json:"ratiosMinikubeletOverKubelet"`
}

type streamRatios struct {
	ExecMedian   float64 `json:"execMedian"`
	ExecP99      float64 `json:"execP99"`
	PortForward  float64 `json:"portForwardMiBps"`
	PerStreamRSS float64 `json:"rssPerStream"`
}

// clusterBench runs the cluster part for both agents and adds it to rep.
func clusterBench(ctx context.Context, bedPath, bin string, o clusterOptions, rep *report) error {
	bed, err := ctrdtest.LoadBed(bedPath)
	if err != nil {
		return err
	}
	bins, err := cluster.LoadBins(o.binsPath)
	if err != nil {
		return err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	// Short: the cluster's containerd socket path must stay under 100 bytes.
	base, err := os.MkdirTemp("/tmp", "mkb.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	cr := &clusterReport{KubeVersion: bins.KubeVersion, Runtime: cluster.DefaultRuntime, ExecRuns: o.execRuns, TransferMiB: o.transferMiB, Streams: o.streams}
	cr.Client = kubectlVersion(ctx, bed.Kubectl) + " with its defaults (WebSocket to the apiserver)"
	figures := []*streamFigures{{Agent: string(cluster.Minikubelet)}, {Agent: string(cluster.Kubelet)}}
	nodes := []*nodeFigures{{Agent: string(cluster.Minikubelet)}, {Agent: string(cluster.Kubelet)}}
	// What was measured is reported, also when a later round fails.
	defer func() {
		if nodes[0].Rounds > 0 && nodes[1].Rounds > 0 {
			for _, f := range nodes {
				f.finish()
			}
			rep.ClusterNode = newNodeReport(o.node, *nodes[0], *nodes[1])
			rep.ClusterNode.print()
		}
		if figures[0].Rounds == 0 || figures[1].Rounds == 0 {
			return
		}
		for _, f := range figures {
			f.finish()
			cr.Agents = append(cr.Agents, *f)
		}
		m, k := cr.Agents[0], cr.Agents[1]
		cr.Ratios = streamRatios{
			ExecMedian:   ratio(m.Exec.MedianMs, k.Exec.MedianMs),
			ExecP99:      ratio(m.Exec.P99Ms, k.Exec.P99Ms),
			PortForward:  ratio(m.PortForwardMiBps, k.PortForwardMiBps),
			PerStreamRSS: ratio(m.PerStreamKiB, k.PerStreamKiB),
		}
		rep.Cluster = cr
		cr.print()
	}()
	for round := 1; round <= o.rounds; round++ {
		for i, f := range figures {
			agent := cluster.Agent(f.Agent)
			fmt.Printf("cluster bench, round %d of %d: starting the one-node cluster with %s (waits for other cluster runs on this host)\n", round, o.rounds, agent)
			if err := agentRound(ctx, bed, bins, bin, base, agent, o, f, nodes[i]); err != nil {
				return fmt.Errorf("cluster bench with %s, round %d: %w", agent, round, err)
			}
		}
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (cr *clusterReport) print() {
	fmt.Printf("streaming through the apiserver to the node agent, one-node cluster %s on %s, client: %s\n", cr.KubeVersion, cr.Runtime, cr.Client)
	fmt.Printf("  %-12s %-34s %-30s %s\n", "", fmt.Sprintf("exec -- true (%d runs)", cr.ExecRuns*cr.Agents[0].Rounds), fmt.Sprintf("port-forward %d MiB", cr.TransferMiB), fmt.Sprintf("RSS per open exec stream (%d open)", cr.Streams))
	for _, f := range cr.Agents {
		fmt.Printf("  %-12s median %6.1f ms  p99 %6.1f ms   %7.1f MiB/s (agent CPU %5.0f ms/GiB)   %7.1f KiB (anonymous %6.1f KiB; RSS %.1f -> %.1f MiB)   node declares %v\n",
			f.Agent, f.Exec.MedianMs, f.Exec.P99Ms, f.PortForwardMiBps, f.AgentCPUPerGiBms, f.PerStreamKiB, f.AnonPerStreamKiB, f.RSSBeforeMiB, f.RSSWithMiB, f.DeclaredFeatures)
	}
	fmt.Printf("  ratio minikubelet/kubelet: exec median %.2fx, p99 %.2fx (lower is better); port-forward %.2fx (higher is better); RSS per stream %.2fx (lower is better)\n",
		cr.Ratios.ExecMedian, cr.Ratios.ExecP99, cr.Ratios.PortForward, cr.Ratios.PerStreamRSS)
}

// kubectlVersion is "kubectl vX.Y.Z", or "kubectl" when it does not say.
func kubectlVersion(ctx context.Context, kubectl string) string {
	out, err := exec.CommandContext(ctx, kubectl, "version", "--client", "-o", "json").Output()
	if err != nil {
		return "kubectl"
	}
	if m := regexp.MustCompile(`"gitVersion":\s*"([^"]+)"`).FindSubmatch(out); m != nil {
		return "kubectl " + string(m[1])
	}
	return "kubectl"
}

// agentRound starts the cluster with agent, measures it (the node part,
// then the streaming part, as o asks) and stops it.
func agentRound(ctx context.Context, bed *ctrdtest.Bed, bins *cluster.Bins, bin, base string, agent cluster.Agent, o clusterOptions, f *streamFigures, nf *nodeFigures) (err error) {
	opts := cluster.Options{Bed: bed, Bins: bins, Dir: base, Agent: agent, AgentBinary: bin, AuditNode: o.nodeOn,
		Logf: func(format string, args ...any) { fmt.Printf("  "+format+"\n", args...) }}
	if o.keepLogs != "" {
		opts.LogDir = filepath.Join(o.keepLogs, string(agent))
	}
	// Start waits for the host's cluster lock first: other clusters (a
	// conformance run takes half an hour) may hold it.
	sctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	c, err := cluster.Start(sctx, opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Stop(context.WithoutCancel(ctx))) }()
	client, err := c.Client()
	if err != nil {
		return err
	}
	mctx, cancel := context.WithTimeout(ctx, 40*time.Minute)
	defer cancel()
	m := &measurer{c: c, agent: agent, kubeconfig: c.Kubeconfig(), kubectl: c.Kubectl(), o: o}
	if o.nodeOn {
		no := o.node
		if o.profileDir != "" {
			no.profile = m.profile
		}
		last := &nodeFigures{}
		if err := nodeBench(mctx, c, client, no, nf, last); err != nil {
			return fmt.Errorf("node part: %w", err)
		}
		nf.Rounds++
		nf.printRound(o.node, last)
	}
	if !o.streaming {
		return nil
	}
	if err := runBenchPod(mctx, client, o.transferMiB); err != nil {
		return err
	}
	node, err := client.CoreV1().Nodes().Get(mctx, c.NodeName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	f.DeclaredFeatures = node.Status.DeclaredFeatures
	if err := m.execRoundTrips(mctx, f); err != nil {
		return err
	}
	if err := m.portForward(mctx, f); err != nil {
		return err
	}
	if err := m.streamMemory(mctx, f); err != nil {
		return err
	}
	f.Rounds++
	f.printRound(o)
	return nil
}

// runBenchPod creates the bench pod and waits for its container to run.
func runBenchPod(ctx context.Context, client kubernetes.Interface, transferMiB int) error {
	if _, err := client.CoreV1().Pods("default").Create(ctx, benchPodSpec(transferMiB), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", benchPod, err)
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		p, err := client.CoreV1().Pods("default").Get(ctx, benchPod, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s not running within 3 minutes", benchPod)
		}
	}
}

// measurer runs kubectl against one cluster and reads its agent.
type measurer struct {
	c                   *cluster.Cluster
	agent               cluster.Agent
	kubeconfig, kubectl string
	o                   clusterOptions
}

func (m *measurer) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, m.kubectl, append([]string{"--kubeconfig", m.kubeconfig}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// execRoundTrips times `kubectl exec POD -- true` execRuns times, after
// one untimed warm-up.
func (m *measurer) execRoundTrips(ctx context.Context, f *streamFigures) error {
	var d []time.Duration
	for i := 0; i <= m.o.execRuns; i++ {
		cmd := m.cmd(ctx, "exec", benchPod, "-c", benchContainer, "--", "true")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			return fmt.Errorf("kubectl exec %s -- true: %w: %s", benchPod, err, out)
		}
		if i > 0 {
			d = append(d, took)
		}
	}
	f.exec = append(f.exec, d...)
	return nil
}

// forwardLine is what kubectl port-forward prints once it listens.
var forwardLine = regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> `)

// portForward runs one `kubectl port-forward` to the pod's benchPort and
// reads transferMiB MiB through it pfRuns times (one untimed warm-up of
// 1 MiB first), each on a new connection, timing connect to the last byte.
func (m *measurer) portForward(ctx context.Context, f *streamFigures) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := m.cmd(pctx, "port-forward", "--address=127.0.0.1", "pod/"+benchPod, ":"+strconv.Itoa(benchPort))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kubectl port-forward: %w", err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	portc := make(chan string, 1) // written once by the reader below
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if mm := forwardLine.FindStringSubmatch(sc.Text()); mm != nil && !sent {
				portc <- mm[1]
				sent = true
			}
		}
		if !sent {
			close(portc)
		}
	}()
	var local string
	select {
	case p, ok := <-portc:
		if !ok {
			return fmt.Errorf("kubectl port-forward exited before listening: %s", stderr.String())
		}
		local = "127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kubectl port-forward not listening within 30s: %s", stderr.String())
	}
	if _, err := transfer(ctx, local, 1<<20); err != nil {
		return fmt.Errorf("warm-up transfer: %w (kubectl: %s)", err, stderr.String())
	}
	if m.o.profileDir != "" {
		secs := max(5, m.o.pfRuns*m.o.transferMiB/100)
		go m.profile(ctx, fmt.Sprintf("profile?seconds=%d", secs), "portforward.cpu.pprof")
	}
	size := int64(m.o.transferMiB) << 20
	pid := m.c.AgentPID()
	cpu0, _, err := procStat(pid)
	if err != nil {
		return err
	}
	for i := 0; i < m.o.pfRuns; i++ {
		took, err := transfer(ctx, local, size)
		if err != nil {
			return fmt.Errorf("transfer %d: %w (kubectl: %s)", i, err, stderr.String())
		}
		f.PortForwardRuns = append(f.PortForwardRuns, float64(m.o.transferMiB)/took.Seconds())
	}
	cpu1, _, err := procStat(pid)
	if err != nil {
		return err
	}
	f.cpu += cpu1 - cpu0
	f.forwardedGiB += float64(m.o.pfRuns*m.o.transferMiB) / 1024
	return nil
}

// transfer connects to addr and reads n bytes, timing connect to the last
// byte. The pod's server writes exactly that many and closes, but the
// client stops at n whether or not the close comes through.
func transfer(ctx context.Context, addr string, n int64) (time.Duration, error) {
	start := time.Now()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Minute))
	got, err := io.CopyN(io.Discard, conn, n)
	if err != nil {
		return 0, fmt.Errorf("read %d of %d bytes: %w", got, n, err)
	}
	return time.Since(start), nil
}

// medianFloat is the median of v (the mean of the middle two for an even
// count).
func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// streamMemory reads the agent's RSS, opens m.o.streams `kubectl exec -i
// POD -- cat` (each proven open by a line echoed back), lets the agent
// settle, reads its RSS again, and closes them.
func (m *measurer) streamMemory(ctx context.Context, f *streamFigures) error {
	pid := m.c.AgentPID()
	rssBefore, anonBefore, err := settledRSS(pid)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type stream struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
	}
	var streams []stream
	defer func() {
		for _, s := range streams {
			_ = s.stdin.Close()
		}
		cancel()
		for _, s := range streams {
			_ = s.cmd.Wait()
		}
	}()
	for i := 0; i < m.o.streams; i++ {
		cmd := m.cmd(sctx, "exec", "-i", benchPod, "-c", benchContainer, "--", "cat")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("kubectl exec -i cat: %w", err)
		}
		streams = append(streams, stream{cmd: cmd, stdin: stdin})
		line := fmt.Sprintf("stream %d\n", i)
		if _, err := io.WriteString(stdin, line); err != nil {
			return fmt.Errorf("stream %d: write: %w", i, err)
		}
		echo := make(chan error, 1) // written once by the reader
		go func() {
			got, err := bufio.NewReader(stdout).ReadString('\n')
			if err == nil && got != line {
				err = fmt.Errorf("echoed %q, want %q", got, line)
			}
			echo <- err
			_, _ = io.Copy(io.Discard, stdout)
		}()
		select {
		case err := <-echo:
			if err != nil {
				return fmt.Errorf("stream %d: %w", i, err)
			}
		case <-time.After(time.Minute):
			return fmt.Errorf("stream %d: no echo within a minute", i)
		}
	}
	if m.o.profileDir != "" {
		m.profile(ctx, "heap", "streams.heap.pprof")
		// The text forms: the heap's with the runtime's MemStats (stacks,
		// heap in use and released), and every goroutine's stack.
		m.profile(ctx, "heap?debug=1", "streams.heap.txt")
		m.profile(ctx, "goroutine?debug=1", "streams.goroutine.txt")
	}
	rssWith, anonWith, err := settledRSS(pid)
	if err != nil {
		return err
	}
	k := float64(m.o.streams)
	f.RSSBeforeMiB, f.RSSWithMiB = float64(rssBefore)/(1<<20), float64(rssWith)/(1<<20)
	f.PerStreamRuns = append(f.PerStreamRuns, float64(rssWith-rssBefore)/1024/k)
	f.anonPerStream = append(f.anonPerStream, float64(anonWith-anonBefore)/1024/k)
	return nil
}

// settledRSS waits 3s, then returns the median of 5 readings a second
// apart of the process's RSS and its anonymous part.
func settledRSS(pid int) (rss, anon int64, err error) {
	time.Sleep(3 * time.Second)
	var rs, as []time.Duration
	for i := 0; i < 5; i++ {
		if i > 0 {
			time.Sleep(time.Second)
		}
		_, r, err := procStat(pid)
		if err != nil {
			return 0, 0, err
		}
		a, err := rssAnon(pid)
		if err != nil {
			return 0, 0, err
		}
		rs, as = append(rs, time.Duration(r)), append(as, time.Duration(a))
	}
	return int64(median(rs)), int64(median(as)), nil
}

// profile saves the agent's pprof endpoint what (through the apiserver's
// node proxy, as an admin) as name in the profile dir, prefixed with the
// agent's name.
func (m *measurer) profile(ctx context.Context, what, name string) {
	path := filepath.Join(m.o.profileDir, string(m.agent)+"."+name)
	out, err := m.cmd(ctx, "get", "--raw", "/api/v1/nodes/"+m.c.NodeName()+"/proxy/debug/pprof/"+what).Output()
	if err == nil {
		err = os.WriteFile(path, out, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: profile %s of %s: %v\n", what, m.agent, err)
	}
}
