package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// cli runs `minikubelet <args> --server <the agent's socket>` and returns
// its output.
func (a *agent) cli(args ...string) (string, string, error) {
	a.t.Helper()
	args = append(args, "--server", "unix://"+a.socket)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCLIPodsAndLogs runs the local CLI against a running agent: `pods`
// prints the table kubectl prints, `logs` the container's output, `-f`
// follows it, `--previous` shows the instance before a restart, and
// mistakes get one clear line.
func TestCLIPodsAndLogs(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("chatty.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  containers:
  - name: talk
    image: %[1]s
    command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done"]
  - name: crash
    image: %[1]s
    command: ["sh", "-c", "echo started-at-$(cat /proc/uptime); if [ -e /state/ran ]; then exec sleep 3600; fi; touch /state/ran; sleep 1; exit 3"]
    volumeMounts:
    - {name: state, mountPath: /state}
  volumes:
  - {name: state, emptyDir: {}}
`, env.busybox))
		a.waitRunning("chatty", 60*time.Second)

		out, stderr, err := a.cli("pods")
		if err != nil {
			t.Fatalf("pods: %v: %s", err, stderr)
		}
		// The columns of `kubectl get pods -A -o wide` (the crash
		// container may have exited already: its columns vary).
		a.checkPodsTable(t, out, true, `default\s+`+a.podName("chatty")+`\s+\d/2\s+\S+\s+\d+( \(\d+s ago\))?\s+\S+\s+\S+\s+`+a.node+`\s+<none>\s+<none>`)

		// The short name of a static pod works; with two containers and no
		// -c, the first is shown and the choice is said.
		polltest.Until(t, 10*time.Second, "a few ticks", func() (bool, string) {
			out, _, _ := a.cli("logs", "chatty", "-c", "talk")
			return strings.Contains(out, "tick-3\n"), out
		})
		out, stderr, err = a.cli("logs", "chatty", "--tail", "2")
		if err != nil || !strings.Contains(stderr, `Defaulted container "talk"`) || strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, "tick-") {
			t.Fatalf("logs --tail 2: %v\nstdout %q\nstderr %q", err, out, stderr)
		}

		// -f follows until stopped.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		follow := exec.CommandContext(ctx, env.binary, "logs", "-f", "chatty", "-c", "talk", "--tail", "1", "--server", "unix://"+a.socket)
		var fout syncBuffer
		follow.Stdout = &fout
		if err := follow.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = follow.Wait() }()
		polltest.Until(t, 10*time.Second, "logs -f shows new lines", func() (bool, string) {
			return strings.Count(fout.String(), "tick-") >= 5, fout.String()
		})

		// --previous: the crashing container's instance before the restart.
		// Only its first run exits (the emptyDir, which outlives a container,
		// remembers it): a second run that ended too would leave the pod in
		// back-off, where the current and the previous log are both the last
		// run's, as with the kubelet.
		polltest.Until(t, 60*time.Second, "the crash container running again", func() (bool, string) {
			p := a.pod("chatty")
			cs := containerStatus(p, "crash")
			return cs != nil && cs.RestartCount == 1 && cs.State.Running != nil, describe(p)
		})
		cur, _, err1 := a.cli("logs", "chatty", "-c", "crash")
		prev, _, err2 := a.cli("logs", "chatty", "-c", "crash", "--previous")
		if err1 != nil || err2 != nil || !strings.HasPrefix(prev, "started-at-") || cur == prev {
			t.Errorf("logs: current %q (%v), previous %q (%v); want two different runs", cur, err1, prev, err2)
		}

		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"logs", "nope"}, `pod "nope" not found`},
			{[]string{"logs", "chatty", "-c", "nope"}, `container "nope" is not valid`},
			{[]string{"logs", "chatty", "-c", "talk", "--previous"}, "previous terminated container"},
		} {
			_, stderr, err := a.cli(tc.args...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("%v: %v, stderr %q; want an error saying %q", tc.args, err, stderr, tc.want)
			}
		}

		// RESTARTS says how long ago, as kubectl does; -n drops NAMESPACE.
		out, stderr, err = a.cli("pods", "-n", "default")
		if err != nil {
			t.Fatalf("pods -n default: %v: %s", err, stderr)
		}
		a.checkPodsTable(t, out, false, a.podName("chatty")+`\s+\d/2\s+\S+\s+[1-9]\d* \(\d+s ago\)\s+\S+\s+\S+\s+`+a.node+`\s+<none>\s+<none>`)
		if _, stderr, err := a.cli("pods", "-n", "nope"); err != nil || strings.TrimSpace(stderr) != "No resources found in nope namespace." {
			t.Errorf("pods -n nope: %v, stderr %q", err, stderr)
		}
	})
	t.Run("agent down", func(t *testing.T) {
		if env.skip != "" {
			t.Skip(env.skip)
		}
		out, err := exec.Command(env.binary, "pods", "--server", fmt.Sprintf("http://127.0.0.1:%d", freePort(t))).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "cannot reach minikubelet") {
			t.Errorf("pods with no agent: %v %s", err, out)
		}
	})
}

// checkPodsTable checks `minikubelet pods` output: kubectl's wide header
// (with NAMESPACE first when withNamespace) and one row matching row.
func (a *agent) checkPodsTable(t *testing.T, out string, withNamespace bool, row string) {
	t.Helper()
	header := `NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES`
	if withNamespace {
		header = `NAMESPACE\s+` + header
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^`+header+`$`).MatchString(lines[0]) || !regexp.MustCompile(`^`+row+`\s*$`).MatchString(lines[1]) {
		t.Errorf("pods printed:\n%s\nwant the header %s and a row %s", out, header, row)
	}
}
