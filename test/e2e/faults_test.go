package e2e

// The fault suite (issue 10): the agent SIGKILLed during pod churn,
// containerd restarted under it, its manifest directory churned, its root
// dir on a full disk, its manifest URL flapping. Every test is named
// TestFault*, runs in its short form in every `go test` of the suite (CI),
// and in its full form under `make faults` (MINIKUBELET_FAULTS=full).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// faultScale is how hard the fault tests push.
type faultScale struct {
	name string
	// kills is how often TestFaultAgentKilledDuringChurn SIGKILLs the
	// agent, over killPods static pods.
	kills, killPods int
	// churnOps manifest writes, renames and deletes are spread over
	// churnFor in TestFaultManifestChurn.
	churnOps int
	churnFor time.Duration
	// restarts is how often TestFaultContainerdRestart restarts containerd;
	// before its last start, containerd stays down for longDown more.
	restarts int
	longDown time.Duration
	// flapFor is how long TestFaultHTTPSourceFlapping's server answers
	// at random.
	flapFor time.Duration
}

var (
	// shortFaults is what CI runs: about two minutes on two cores.
	shortFaults = faultScale{name: "short", kills: 3, killPods: 6, churnOps: 150, churnFor: 10 * time.Second, restarts: 1, longDown: 0, flapFor: 5 * time.Second}
	// fullFaults is issue 10's letter: `make faults`.
	fullFaults = faultScale{name: "full", kills: 20, killPods: 12, churnOps: 1000, churnFor: 60 * time.Second, restarts: 3, longDown: 12 * time.Second, flapFor: 30 * time.Second}
)

// faults returns the scale MINIKUBELET_FAULTS asks for: "full", or the
// short form when unset or "short".
func faults(t *testing.T) faultScale {
	t.Helper()
	switch v := os.Getenv("MINIKUBELET_FAULTS"); v {
	case "", "short":
		return shortFaults
	case "full":
		return fullFaults
	default:
		t.Fatalf("MINIKUBELET_FAULTS=%q: want short or full", v)
		return faultScale{}
	}
}

// flag returns the last value of --name among the agent's flags.
func (a *agent) flag(name string) string {
	v := ""
	for i, arg := range a.args {
		if arg == "--"+name && i+1 < len(a.args) {
			v = a.args[i+1]
		}
	}
	return v
}

// sandboxWatcher samples the runtime's sandboxes of one node and remembers
// every one it saw, with its pod's UID and its network namespace (for a
// pod not on the host's network), so that leftovers can check that what a
// sandbox had outside the runtime went with it.
type sandboxWatcher struct {
	rt   *ctrdtest.Containerd
	node string

	mu sync.Mutex
	// seen maps the ID of every sandbox seen to what is known of it.
	seen map[string]seenSandbox
}

// seenSandbox is a sandbox a sandboxWatcher saw.
type seenSandbox struct {
	uid string
	// netns is its network namespace path; "" for the host's network, or
	// when its status could not be read.
	netns string
}

func newSandboxWatcher(rt *ctrdtest.Containerd, node string) *sandboxWatcher {
	return &sandboxWatcher{rt: rt, node: node, seen: map[string]seenSandbox{}}
}

// start samples every 100ms until the test ends.
func (w *sandboxWatcher) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w.sample(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func (w *sandboxWatcher) sample(ctx context.Context) {
	sandboxes, _, err := runtimePods(ctx, w.rt, w.node)
	if err != nil {
		return // containerd may be restarting
	}
	for _, sb := range sandboxes {
		w.mu.Lock()
		_, known := w.seen[sb.Id]
		w.mu.Unlock()
		if known {
			continue
		}
		s := seenSandbox{uid: sb.Labels["io.kubernetes.pod.uid"]}
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			s.netns = sandboxNetns(ctx, w.rt, sb.Id)
		}
		w.mu.Lock()
		w.seen[sb.Id] = s
		w.mu.Unlock()
	}
}

// sandboxes returns the sandboxes seen.
func (w *sandboxWatcher) sandboxes() map[string]seenSandbox {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]seenSandbox, len(w.seen))
	for id, s := range w.seen {
		out[id] = s
	}
	return out
}

// sandboxNetns reads a sandbox's network namespace path from its runtime
// spec in the verbose status; "" for the host's network.
func sandboxNetns(ctx context.Context, rt *ctrdtest.Containerd, id string) string {
	resp, err := rt.Runtime().PodSandboxStatus(ctx, id, true)
	if err != nil {
		return ""
	}
	var info struct {
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct {
					Type string `json:"type"`
					Path string `json:"path"`
				} `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		return ""
	}
	for _, ns := range info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" {
			return ns.Path
		}
	}
	return ""
}

// containerIDRe matches a container's cgroup directory name.
var containerIDRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// leftover is one thing of a pod left on the host.
type leftover struct {
	// uid is the pod's UID, "" when unknown.
	uid  string
	what string
}

// leftovers lists what of the agent's pods is still on the host: its
// node's sandboxes and containers in the runtime; mounts under
// <root-dir>/pods and the pod logs dir; pod and container cgroups under its
// --cgroup-root in any hierarchy; pod directories under <root-dir>/pods
// and pod log directories; and, for every sandbox w saw, its network
// namespace mount, its IP lease and libcni's cached result. Empty means
// the node is clean.
func (a *agent) leftovers(ctx context.Context, w *sandboxWatcher) []leftover {
	a.t.Helper()
	var out []leftover
	sandboxes, containers, err := runtimePods(ctx, a.rt, a.node)
	if err != nil {
		return []leftover{{what: fmt.Sprintf("runtime: %v", err)}}
	}
	for _, sb := range sandboxes {
		out = append(out, leftover{sb.Labels["io.kubernetes.pod.uid"], fmt.Sprintf("sandbox %s %s (%s)", sb.Id[:12], sb.Metadata.Name, sb.State)})
	}
	for _, c := range containers {
		out = append(out, leftover{c.Labels["io.kubernetes.pod.uid"], fmt.Sprintf("container %s %s (%s)", c.Id[:12], c.Metadata.Name, c.State)})
	}
	podsDir := filepath.Join(a.flag("root-dir"), "pods")
	for _, m := range mountsUnder(a.t, podsDir) {
		uid, _, _ := strings.Cut(strings.TrimPrefix(m, podsDir+"/"), "/")
		out = append(out, leftover{uid, "mount " + m})
	}
	entries, _ := os.ReadDir(podsDir)
	for _, e := range entries {
		out = append(out, leftover{e.Name(), "pod directory " + filepath.Join(podsDir, e.Name())})
	}
	logsDir := a.flag("pod-logs-dir")
	for _, m := range mountsUnder(a.t, logsDir) {
		out = append(out, leftover{"", "mount " + m})
	}
	entries, _ = os.ReadDir(logsDir)
	for _, e := range entries {
		out = append(out, leftover{e.Name()[strings.LastIndexByte(e.Name(), '_')+1:], "log directory " + filepath.Join(logsDir, e.Name())})
	}
	for _, h := range cgroupHierarchies(a.t) {
		_ = filepath.WalkDir(filepath.Join(h, a.cgroupRoot()), func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil || !d.IsDir():
				return nil
			case strings.HasPrefix(d.Name(), "pod"):
				out = append(out, leftover{strings.TrimPrefix(d.Name(), "pod"), "cgroup " + p})
				return filepath.SkipDir
			case containerIDRe.MatchString(d.Name()):
				out = append(out, leftover{"", "cgroup " + p})
				return filepath.SkipDir
			}
			return nil
		})
	}
	if w != nil {
		out = append(out, a.networkLeftovers(w.sandboxes())...)
	}
	slices.SortFunc(out, func(x, y leftover) int { return strings.Compare(x.what, y.what) })
	return out
}

// networkLeftovers lists the network namespace mounts, host-local IP
// leases and libcni cache entries still held for the sandboxes seen.
func (a *agent) networkLeftovers(seen map[string]seenSandbox) []leftover {
	var out []leftover
	leases := map[string]string{} // sandbox ID -> lease file
	ipamDir := filepath.Join(a.rt.Dir(), "cni", "ipam", a.rt.Network())
	if entries, err := os.ReadDir(ipamDir); err == nil {
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(ipamDir, e.Name()))
			if err != nil {
				continue
			}
			if id, _, _ := strings.Cut(string(b), "\n"); id != "" {
				leases[strings.TrimSpace(id)] = filepath.Join(ipamDir, e.Name())
			}
		}
	}
	for id, sb := range seen {
		if sb.netns != "" && len(mountsUnder(a.t, sb.netns)) > 0 {
			out = append(out, leftover{sb.uid, fmt.Sprintf("network namespace %s of sandbox %s", sb.netns, id[:12])})
		}
		if f, ok := leases[id]; ok {
			out = append(out, leftover{sb.uid, fmt.Sprintf("IP lease %s of sandbox %s", f, id[:12])})
		}
		if m, _ := filepath.Glob("/var/lib/cni/results/*-" + id + "-*"); len(m) > 0 {
			out = append(out, leftover{sb.uid, fmt.Sprintf("CNI results %v of sandbox %s", m, id[:12])})
		}
	}
	return out
}

// stuckPods returns the UIDs of the node's pods that hold a container
// containerd refuses to delete ("cannot delete running task", as the
// agent's log shows), with the container. containerd (1.6 and 2.1 alike,
// seen here) leaves such a container when a StartContainer is cut short,
// which a SIGKILL of the agent does (containerd/containerd#11037): nothing
// can remove it through CRI, nor so the pod's sandbox, nor what the agent
// keeps for the pod while the runtime holds anything of it (its cgroup,
// pod and log directories, volumes). A container whose start the agent itself cancelled (its log
// says so) is the agent's fault and does not count.
func (a *agent) stuckPods(ctx context.Context) map[string]*runtimeapi.Container {
	_, containers, err := runtimePods(ctx, a.rt, a.node)
	if err != nil {
		return nil
	}
	a.logFacts.follow(a.logPath)
	out := map[string]*runtimeapi.Container{}
	for _, c := range containers {
		if a.logFacts.refused[c.Id] && !a.logFacts.cancelled[c.Id] {
			out[c.Labels["io.kubernetes.pod.uid"]] = c
		}
	}
	return out
}

// Log lines logFacts looks for.
var (
	refusedRe   = regexp.MustCompile(`cannot delete running task ([0-9a-f]{64})`)
	cancelledRe = regexp.MustCompile(`"StartContainer from runtime service failed" err="rpc error: code = Canceled.* containerID="([0-9a-f]{64})"`)
)

// logFacts is what the agent's log says of containers, read as the log
// grows (the tests poll it every 50ms, and the log of a churn runs to
// megabytes): the containers containerd refused to delete, and those whose
// StartContainer the agent saw cancelled. Not safe for concurrent use.
type logFacts struct {
	offset             int64
	refused, cancelled map[string]bool
}

// follow reads the complete lines the log at path gained since the last
// call.
func (f *logFacts) follow(path string) {
	if f.refused == nil {
		f.refused, f.cancelled = map[string]bool{}, map[string]bool{}
	}
	file, err := os.Open(path)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(file)
	if err != nil {
		return
	}
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		return
	}
	f.offset += int64(end + 1)
	for _, m := range refusedRe.FindAllSubmatch(b[:end], -1) {
		f.refused[string(m[1])] = true
	}
	for _, m := range cancelledRe.FindAllSubmatch(b[:end], -1) {
		f.cancelled[string(m[1])] = true
	}
}

// waitClean waits until the agent has removed everything of its pods from
// the host (leftovers is empty) but what containerd keeps of stuck pods
// (stuckPods), which it logs; it removes nothing itself.
func (a *agent) waitClean(w *sandboxWatcher, timeout time.Duration) {
	a.t.Helper()
	ctx := context.Background()
	var stuck map[string]*runtimeapi.Container
	waitForLogged(a.t, timeout, "nothing of the node's pods left on the host", func() (bool, string, string) {
		stuck = a.stuckPods(ctx)
		var left []string
		for _, l := range a.leftovers(ctx, w) {
			if _, ok := stuck[l.uid]; !ok || l.uid == "" {
				left = append(left, l.what)
			}
		}
		return len(left) == 0, strings.Join(left, "; "), "left: " + summarize(left)
	})
	for uid, c := range stuck {
		a.t.Logf("containerd keeps container %s of pod %s, which it can neither start nor delete after a StartContainer cut short by the agent's SIGKILL (containerd/containerd#11037); the pod's sandbox, cgroup and directories stay with it, outside the agent's reach, until the bed's teardown", c.Id[:12], uid)
	}
}

// waitForLogged is polltest.Until that also logs, with the time since it began,
// each new summary cond gives of the state: a slow wait shows what it
// waited on.
func waitForLogged(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state, summary string)) {
	t.Helper()
	t0, last := time.Now(), ""
	polltest.Until(t, timeout, what, func() (bool, string) {
		ok, state, summary := cond()
		if summary != last {
			t.Logf("%v: %s", time.Since(t0).Round(time.Millisecond), summary)
			last = summary
		}
		return ok, state
	})
}

// summarize counts leftovers by kind (their first word), for progress lines.
func summarize(left []string) string {
	if len(left) == 0 {
		return "nothing"
	}
	counts := map[string]int{}
	for _, l := range left {
		kind, _, _ := strings.Cut(l, " ")
		counts[kind]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// metric returns the value of an unlabelled metric, or of the sample of a
// labelled one whose label set is exactly labels (e.g. `{mode="evented"}`),
// on /metrics; ok is false when it is absent.
func (a *agent) metric(name, labels string) (float64, bool) {
	body, code, err := a.get(a.port, "/metrics")
	if err != nil || code != 200 {
		return 0, false
	}
	for _, line := range strings.Split(body, "\n") {
		rest, found := strings.CutPrefix(line, name+labels+" ")
		if !found {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

// startInvariantChecker samples the runtime for the rest of the test and
// returns the checker; the test reads its faults at the end.
func startInvariantChecker(t *testing.T, rt *ctrdtest.Containerd, node string) *invariantChecker {
	c := &invariantChecker{rt: rt, node: node}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// report fails t for every time two containers of one pod and name ran at
// once, and logs how much was sampled.
func (c *invariantChecker) report(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("invariant checker: %d runtime samples, %d faults", c.samples, len(c.faults))
	for _, f := range c.faults {
		t.Errorf("two running containers of one pod and name: %s", f)
	}
}

// containerEnv reads a container's environment from its runtime spec
// (verbose status), as the runtime runs it.
func containerEnv(ctx context.Context, rt *ctrdtest.Containerd, id string) ([]string, error) {
	resp, err := rt.Runtime().ContainerStatus(ctx, id, true)
	if err != nil {
		return nil, err
	}
	var info struct {
		RuntimeSpec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		return nil, fmt.Errorf("verbose status of %s: %w", id, err)
	}
	return info.RuntimeSpec.Process.Env, nil
}

// convergedTo reports whether /pods and the runtime show exactly the static
// pods of want, each once: want maps a pod's name (without the node
// suffix) to the value of REV in the env of its container ctr. On /pods
// each is Running with ctr running and REV in its spec; in the runtime each
// has one sandbox, ready, with one running ctr whose env holds REV, and the
// node has no other sandbox. The string says what differs.
func (a *agent) convergedTo(ctx context.Context, want map[string]string, ctr string) (bool, string) {
	pods, err := a.pods()
	if err != nil {
		return false, err.Error()
	}
	var diffs []string
	onPods := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		name := strings.TrimSuffix(p.Name, "-"+a.node)
		onPods[name] = true
		rev, wanted := want[name]
		if !wanted {
			diffs = append(diffs, "extra on /pods: "+name)
			continue
		}
		if got := specEnv(p.Spec.Containers, ctr, "REV"); got != rev {
			diffs = append(diffs, fmt.Sprintf("%s: REV %q on /pods, want %q", name, got, rev))
		}
		if cs := containerStatus(p, ctr); p.Status.Phase != "Running" || cs == nil || cs.State.Running == nil {
			diffs = append(diffs, fmt.Sprintf("%s: %s", name, describe(p)))
		}
	}
	for name := range want {
		if !onPods[name] {
			diffs = append(diffs, "missing on /pods: "+name)
		}
	}
	sandboxes, containers, err := runtimePods(ctx, a.rt, a.node)
	if err != nil {
		return false, err.Error()
	}
	// A stopped sandbox containerd keeps because of a container it cannot
	// delete (stuckPods) is beyond the agent, which runs the pod in a new
	// one. (A ready one goes on running the pod beside that container.)
	stuckSandboxes := map[string]bool{}
	for _, c := range a.stuckPods(ctx) {
		stuckSandboxes[c.PodSandboxId] = true
	}
	inRuntime := map[string][]*runtimeapi.PodSandbox{}
	for _, sb := range sandboxes {
		if stuckSandboxes[sb.Id] && sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		name := strings.TrimSuffix(sb.Metadata.Name, "-"+a.node)
		inRuntime[name] = append(inRuntime[name], sb)
	}
	for name, sbs := range inRuntime {
		if _, wanted := want[name]; !wanted {
			diffs = append(diffs, fmt.Sprintf("extra in the runtime: %d sandboxes of %s", len(sbs), name))
		} else if len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
			var states []string
			for _, sb := range sbs {
				states = append(states, sb.Id[:12]+":"+sb.State.String())
			}
			diffs = append(diffs, fmt.Sprintf("%s: sandboxes %v, want one ready", name, states))
		}
	}
	running := map[string][]string{} // pod name -> IDs of running ctr
	for _, c := range containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING && c.Metadata.Name == ctr {
			name := strings.TrimSuffix(c.Labels["io.kubernetes.pod.name"], "-"+a.node)
			running[name] = append(running[name], c.Id)
		}
	}
	for name := range want {
		if len(inRuntime[name]) == 0 {
			diffs = append(diffs, "missing in the runtime: "+name)
		}
		if n := len(running[name]); n != 1 {
			diffs = append(diffs, fmt.Sprintf("%s: %d running %s containers, want 1", name, n, ctr))
		}
	}
	if len(diffs) > 0 {
		return false, strings.Join(diffs, "; ")
	}
	// The runtime runs the wanted spec: REV as the container's env has it.
	for name, rev := range want {
		env, err := containerEnv(ctx, a.rt, running[name][0])
		if err != nil {
			return false, err.Error()
		}
		if !slices.Contains(env, "REV="+rev) {
			diffs = append(diffs, fmt.Sprintf("%s: container %s runs with env %v, want REV=%s", name, running[name][0][:12], env, rev))
		}
	}
	return len(diffs) == 0, strings.Join(diffs, "; ")
}

// convergenceSummary shortens a convergedTo state to what each pod still
// lacks, for progress lines.
func convergenceSummary(state string) string {
	if state == "" {
		return "converged"
	}
	var parts []string
	for _, d := range strings.Split(state, "; ") {
		if i := strings.Index(d, " ip="); i >= 0 {
			d = d[:i] // "name: phase=X ip=... containers" -> "name: phase=X"
		}
		parts = append(parts, d)
	}
	return "waiting: " + strings.Join(parts, "; ")
}

// specEnv returns the value of env var key of container name in cs.
func specEnv(cs []v1.Container, name, key string) string {
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		for _, e := range c.Env {
			if e.Name == key {
				return e.Value
			}
		}
	}
	return ""
}
