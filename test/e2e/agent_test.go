package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/localsock"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
	"github.com/minikubelet/minikubelet/test/freeport"
)

// agent is one bin/minikubelet process a test runs, with its own node name,
// manifest directory, root and log directories and ports.
type agent struct {
	t        testing.TB
	rt       *ctrdtest.Containerd
	node     string
	dir      string
	manifest string
	logsDir  string
	// port is the read-only port; kubeletPort the kubelet port, served
	// only when the test gives a way to authenticate.
	port        int
	kubeletPort int
	healthz     int
	// socket is the local socket, which serves every endpoint;
	// sockTCP serves it on a TCP port once a test asks (streamPort).
	socket  string
	sockTCP struct {
		once sync.Once
		port int
	}
	cmd     *exec.Cmd
	logPath string
	args    []string
	env     []string
	exited  chan struct{}
	client  *http.Client
	// logFacts follows the log for the fault tests (faults_test.go).
	logFacts logFacts
}

// startAgent starts minikubelet against rt. Cleanup stops it and removes
// every sandbox of its node from the runtime, then dumps its log if the
// test failed.
func startAgent(t testing.TB, rt *ctrdtest.Containerd, extraArgs ...string) *agent {
	t.Helper()
	return startAgentWith(t, rt, agentOptions{args: extraArgs})
}

// agentOptions vary how startAgentWith starts the agent.
type agentOptions struct {
	// args are more flags; later flags override earlier ones.
	args []string
	// missingManifestDir starts the agent before its manifest directory
	// exists.
	missingManifestDir bool
	// env is added to the agent's environment.
	env []string
	// beforeLaunch, if set, runs once the agent's directories exist and
	// before it starts (to write manifests it must find at start).
	beforeLaunch func(a *agent)
	// noWaitHealthy returns as soon as the agent runs, not once /healthz
	// answers ok.
	noWaitHealthy bool
}

func startAgentWith(t testing.TB, rt *ctrdtest.Containerd, opts agentOptions) *agent {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(t.Name()))
	a := &agent{
		t:           t,
		rt:          rt,
		node:        "node-" + hex.EncodeToString(sum[:4]),
		dir:         dir,
		manifest:    filepath.Join(dir, "manifests"),
		logsDir:     filepath.Join(dir, "logs"),
		port:        freePort(t),
		kubeletPort: freePort(t),
		healthz:     freePort(t),
		socket:      socketPath(t),
		logPath:     filepath.Join(dir, "minikubelet.log"),
		client:      &http.Client{Timeout: 5 * time.Second},
	}
	if !opts.missingManifestDir {
		if err := os.MkdirAll(a.manifest, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{
		"--pod-manifest-path", a.manifest,
		"--container-runtime-endpoint", rt.Endpoint(),
		"--root-dir", filepath.Join(dir, "root"),
		"--pod-logs-dir", a.logsDir,
		"--hostname-override", a.node,
		"--read-only-port", strconv.Itoa(a.port),
		"--port", strconv.Itoa(a.kubeletPort),
		"--socket", a.socket,
		"--healthz-port", strconv.Itoa(a.healthz),
		"--file-check-frequency", "20s",
		// Pods' cgroups go below the bed's cgroup parent, which its
		// teardown removes, one subtree per agent.
		"--cgroup-root", a.cgroupRoot(),
		"-v", "3",
	}, opts.args...)
	a.args = args
	a.env = opts.env
	if opts.beforeLaunch != nil {
		opts.beforeLaunch(a)
	}
	a.launch()
	t.Cleanup(a.cleanup)
	if !opts.noWaitHealthy {
		a.waitHealthy()
	}
	return a
}

// launch starts the agent process, appending to its log.
func (a *agent) launch() {
	a.t.Helper()
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	a.exited = make(chan struct{})
	a.cmd = exec.Command(env.binary, a.args...)
	if len(a.env) > 0 {
		a.cmd.Env = append(os.Environ(), a.env...)
	}
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if len(a.env) > 0 {
		a.cmd.Env = append(os.Environ(), a.env...)
	}
	if err := a.cmd.Start(); err != nil {
		a.t.Fatalf("start minikubelet: %v", err)
	}
	exited := a.exited
	go func() {
		_ = a.cmd.Wait()
		logFile.Close()
		close(exited)
	}()
}

func (a *agent) waitHealthy() {
	a.t.Helper()
	polltest.Until(a.t, 30*time.Second, "agent healthy", func() (bool, string) {
		select {
		case <-a.exited:
			// Its last lines say why; the failure summary keeps only
			// the first lines each test logs, so they go on one.
			b, _ := os.ReadFile(a.logPath)
			a.t.Fatalf("minikubelet exited before it was healthy (%v); its last lines: %q", a.cmd.ProcessState, tail(strings.TrimSpace(string(b)), 5))
		default:
		}
		body, code, err := a.get(a.healthz, "/healthz")
		return err == nil && code == 200, fmt.Sprintf("code %d body %q err %v", code, body, err)
	})
}

// kill SIGKILLs the agent, as a crash or the OOM killer would, leaving
// its pods running.
func (a *agent) kill() {
	a.t.Helper()
	if err := a.cmd.Process.Kill(); err != nil {
		a.t.Fatal(err)
	}
	<-a.exited
}

// restart starts the agent again with the same flags and directories.
func (a *agent) restart() {
	a.t.Helper()
	a.launch()
	a.waitHealthy()
}

func (a *agent) cleanup() {
	a.stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	removeNodePods(ctx, a.t, a.rt, a.node)
	// Pods outlive the agent, and so do their volumes' mounts: unmount
	// them before the test's temp dir is removed.
	unmountUnder(a.t, a.dir)
	if a.logContains("WARNING: DATA RACE") {
		a.t.Errorf("the race detector reported a data race in minikubelet")
	}
	if a.t.Failed() {
		if b, err := os.ReadFile(a.logPath); err == nil {
			a.t.Logf("minikubelet log (%s):\n%s", a.node, tail(string(b), 200))
			a.keepLog(b)
		}
	}
}

// keepLog copies the whole log of a failed test's agent into
// $MINIKUBELET_E2E_LOGS, when set, as <test>-<node>.log: the tail in the
// test's output is often not enough to tell what happened.
func (a *agent) keepLog(b []byte) {
	dir := os.Getenv("MINIKUBELET_E2E_LOGS")
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(a.t.Name()) + "-" + a.node + ".log"
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		if err == nil {
			a.t.Logf("whole minikubelet log: %s", filepath.Join(dir, name))
			return
		}
	}
	a.t.Logf("cannot keep the minikubelet log in %s", dir)
}

// stop sends SIGTERM and waits for the agent to exit.
func (a *agent) stop() {
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(15 * time.Second):
		a.t.Errorf("minikubelet did not exit 15s after SIGTERM; killing it")
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// alive reports whether the agent process still runs.
func (a *agent) alive() bool {
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// cgroupRoot is the agent's --cgroup-root: its own subtree below the
// bed's cgroup parent.
func (a *agent) cgroupRoot() string { return a.rt.CgroupParent() + "/" + a.node }

// podName is the name the agent gives a static pod: <name>-<node>.
func (a *agent) podName(name string) string { return name + "-" + a.node }

func (a *agent) writeManifest(file, content string) {
	a.t.Helper()
	// Write then rename, as a careful user or a config tool does.
	tmp := filepath.Join(a.manifest, "."+file+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		a.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(a.manifest, file)); err != nil {
		a.t.Fatal(err)
	}
}

func (a *agent) removeManifest(file string) {
	a.t.Helper()
	if err := os.Remove(filepath.Join(a.manifest, file)); err != nil {
		a.t.Fatal(err)
	}
}

func (a *agent) get(port int, path string) (string, int, error) {
	return getBody(a.client, fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
}

// local GETs path through the agent's local socket, which serves every
// endpoint to root.
func (a *agent) local(path string) (string, int, error) {
	return getBody(&http.Client{Transport: localsock.Transport(a.socket), Timeout: 5 * time.Second}, "http://minikubelet"+path)
}

func getBody(c *http.Client, url string) (string, int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}

// socketPath returns a path for an agent's local socket in a directory of
// its own that the test's cleanup removes: short, as a socket's path must
// be (t.TempDir's may be too long).
func socketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "mk.sock")
}

// pods returns /pods.
func (a *agent) pods() ([]v1.Pod, error) {
	body, code, err := a.get(a.port, "/pods")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/pods: HTTP %d: %s", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		return nil, fmt.Errorf("/pods: %w", err)
	}
	return list.Items, nil
}

// pod returns the static pod called name on /pods, or nil.
func (a *agent) pod(name string) *v1.Pod {
	a.t.Helper()
	pods, err := a.pods()
	if err != nil {
		a.t.Fatal(err)
	}
	for i := range pods {
		if pods[i].Name == a.podName(name) {
			return &pods[i]
		}
	}
	return nil
}

// waitRunning waits until every container of the static pod name runs and
// returns the pod.
func (a *agent) waitRunning(name string, timeout time.Duration) *v1.Pod {
	a.t.Helper()
	var pod *v1.Pod
	polltest.Until(a.t, timeout, name+" running", func() (bool, string) {
		pod = a.pod(name)
		if pod == nil {
			return false, "not on /pods"
		}
		return allRunning(pod), describe(pod)
	})
	return pod
}

func (a *agent) logContains(s string) bool {
	b, err := os.ReadFile(a.logPath)
	return err == nil && strings.Contains(string(b), s)
}

// containerLog returns the path of a container's log file.
func (a *agent) containerLog(pod *v1.Pod, container string, restart int) string {
	return filepath.Join(a.logsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container, fmt.Sprintf("%d.log", restart))
}

func allRunning(pod *v1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// containerStatus returns the status of pod's container called name, or
// nil (no pod, or no status yet: a restarted agent has none until the pod's
// first sync).
func containerStatus(pod *v1.Pod, name string) *v1.ContainerStatus {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// describe summarises a pod's status for failure messages.
func describe(pod *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s ip=%s", pod.Status.Phase, pod.Status.PodIP)
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			fmt.Fprintf(&b, " %s=running", cs.Name)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, " %s=terminated(%d,%s)", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, " %s=waiting(%s: %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		}
	}
	return b.String()
}

// freePort picks a port below the ephemeral range (see freeport), so
// that an agent restarted on its port finds it still free.
func freePort(t testing.TB) int { return freeport.Must(t) }

// runtimePods returns the sandboxes of the runtime whose pod name belongs
// to node, and the containers in them.
func runtimePods(ctx context.Context, rt *ctrdtest.Containerd, node string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	sandboxes, err := rt.Runtime().ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	var mine []*runtimeapi.PodSandbox
	ids := map[string]bool{}
	for _, sb := range sandboxes {
		if strings.HasSuffix(sb.GetMetadata().GetName(), "-"+node) {
			mine = append(mine, sb)
			ids[sb.Id] = true
		}
	}
	containers, err := rt.Runtime().ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	var ctrs []*runtimeapi.Container
	for _, c := range containers {
		if ids[c.PodSandboxId] {
			ctrs = append(ctrs, c)
		}
	}
	return mine, ctrs, nil
}

// removeNodePods removes every sandbox (and so container) of node.
func removeNodePods(ctx context.Context, t testing.TB, rt *ctrdtest.Containerd, node string) {
	sandboxes, _, err := runtimePods(ctx, rt, node)
	if err != nil {
		t.Errorf("cleanup: list pods of %s: %v", node, err)
		return
	}
	var wg sync.WaitGroup
	for _, sb := range sandboxes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = rt.Runtime().StopPodSandbox(ctx, sb.Id)
			err := rt.Runtime().RemovePodSandbox(ctx, sb.Id)
			if err == nil {
				return
			}
			// containerd 2.1 can keep a task it refuses to delete after an
			// agent was SIGKILLed mid-start: stop its containers and try
			// again; what still resists goes with the bed's teardown
			// (ctrdtest.Stop kills the shims and removes the daemon's state).
			if ctrs, lerr := rt.Runtime().ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb.Id}); lerr == nil {
				for _, c := range ctrs {
					_ = rt.Runtime().StopContainer(ctx, c.Id, 0)
				}
			}
			if err := rt.Runtime().RemovePodSandbox(ctx, sb.Id); err != nil {
				if strings.Contains(err.Error(), "cannot delete running task") {
					t.Logf("cleanup: containerd keeps a task it cannot delete in sandbox %s; the bed's teardown removes it: %v", sb.Id, err)
					return
				}
				t.Errorf("cleanup: remove sandbox %s: %v", sb.Id, err)
			}
		}()
	}
	wg.Wait()
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// logLineWith returns the last log line naming s, or "".
func (a *agent) logLineWith(s string) string {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	return ""
}

// countLogLines counts the log lines naming s.
func (a *agent) countLogLines(s string) int {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}
