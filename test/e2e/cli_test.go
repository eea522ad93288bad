package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
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
    command: ["sh", "-c", "echo started-at-$(cat /proc/uptime); sleep 4; exit 3"]
`, env.busybox))
		a.waitRunning("chatty", 60*time.Second)

		out, stderr, err := a.cli("pods")
		if err != nil {
			t.Fatalf("pods: %v: %s", err, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "RESTARTS") || !strings.HasPrefix(lines[1], a.podName("chatty")+" ") {
			t.Fatalf("pods printed:\n%s", out)
		}

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
		// Its first restart is at once: its second run lasts 4s.
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
