package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// supervisor is a notify-aware service manager as far as the agent can
// tell: a unixgram socket named by NOTIFY_SOCKET that records every
// datagram with the time it arrived.
type supervisor struct {
	t      *testing.T
	socket string
	conn   *net.UnixConn

	mu   sync.Mutex
	msgs []notification
	// onReady, if set, runs on the reading goroutine as the first READY=1
	// arrives, before the next datagram is read.
	onReady func()
}

// notification is one datagram.
type notification struct {
	at    time.Time
	lines []string
}

func (n notification) has(line string) bool {
	for _, l := range n.lines {
		if l == line {
			return true
		}
	}
	return false
}

func (n notification) status() (string, bool) {
	for _, l := range n.lines {
		if s, ok := strings.CutPrefix(l, "STATUS="); ok {
			return s, true
		}
	}
	return "", false
}

func newSupervisor(t *testing.T) *supervisor {
	t.Helper()
	// A short path: unix socket names are limited to 107 bytes.
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &supervisor{t: t, socket: filepath.Join(dir, "notify")}
	s.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		s.conn.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, 64*1024)
		for {
			n, err := s.conn.Read(buf)
			if err != nil {
				return
			}
			msg := notification{at: time.Now(), lines: strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n")}
			s.mu.Lock()
			s.msgs = append(s.msgs, msg)
			var onReady func()
			if msg.has("READY=1") {
				onReady, s.onReady = s.onReady, nil
			}
			s.mu.Unlock()
			if onReady != nil {
				onReady()
			}
		}
	}()
	return s
}

func (s *supervisor) setOnReady(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onReady = f
}

// snapshot returns the notifications so far.
func (s *supervisor) snapshot() []notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notification(nil), s.msgs...)
}

// waitFor waits for a notification with line and returns its index.
func (s *supervisor) waitFor(timeout time.Duration, line string) int {
	s.t.Helper()
	idx := -1
	polltest.Until(s.t, timeout, line, func() (bool, string) {
		msgs := s.snapshot()
		for i, m := range msgs {
			if m.has(line) {
				idx = i
				return true, ""
			}
		}
		return false, s.describe(msgs)
	})
	return idx
}

// waitForStatus waits for a STATUS= line with prefix, after index from.
func (s *supervisor) waitForStatus(timeout time.Duration, from int, prefix string) string {
	s.t.Helper()
	var got string
	polltest.Until(s.t, timeout, "STATUS="+prefix+"...", func() (bool, string) {
		msgs := s.snapshot()
		for _, m := range msgs[min(from, len(msgs)):] {
			if st, ok := m.status(); ok && strings.HasPrefix(st, prefix) {
				got = st
				return true, ""
			}
		}
		return false, s.describe(msgs)
	})
	return got
}

func (s *supervisor) describe(msgs []notification) string {
	var b strings.Builder
	for _, m := range msgs {
		if len(m.lines) == 1 && m.lines[0] == "WATCHDOG=1" {
			continue
		}
		fmt.Fprintf(&b, "\n  %s %q", m.at.Format("15:04:05.000"), m.lines)
	}
	return b.String()
}

// The agent under a notify-aware supervisor: STATUS lines while it starts,
// READY=1 once after the pods of its manifest directory run, STATUS when
// the pod count changes, WATCHDOG=1 every half of WATCHDOG_USEC, and
// STOPPING=1 on SIGTERM. The agent reads a KubeletConfiguration too.
func TestNotifyReadyStatusWatchdog(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		sup := newSupervisor(t)
		var atReady struct {
			sync.Mutex
			running, total int
			err            error
		}
		readySeen := make(chan struct{})
		const watchdog = 2 * time.Second
		a := startAgentWith(t, rt, agentOptions{
			env: []string{"NOTIFY_SOCKET=" + sup.socket, fmt.Sprintf("WATCHDOG_USEC=%d", watchdog.Microseconds())},
			beforeLaunch: func(a *agent) {
				// What the runtime runs the moment READY=1 arrives.
				sup.setOnReady(func() {
					defer close(readySeen)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_, ctrs, err := runtimePods(ctx, rt, a.node)
					atReady.Lock()
					defer atReady.Unlock()
					atReady.err = err
					atReady.total = len(ctrs)
					for _, c := range ctrs {
						if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
							atReady.running++
						}
					}
				})
				config := filepath.Join(a.dir, "config.yaml")
				// rotateCertificates, as kubeadm's config file sets it, has
				// no effect standalone (no client certificate to renew);
				// topologyManagerPolicy is a field minikubelet does not read.
				writeFile(t, config, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nrotateCertificates: true\ntopologyManagerPolicy: single-numa-node\nsyncFrequency: 30s\n")
				a.args = append(a.args, "--config", config)
				for _, name := range []string{"alpha", "beta"} {
					a.writeManifest(name+".yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
  - name: side
    image: %[2]s
    command: ["sleep", "3600"]
`, name, env.busybox))
				}
			},
		})

		ready := sup.waitFor(90*time.Second, "READY=1")
		<-readySeen
		atReady.Lock()
		if atReady.err != nil || atReady.total != 4 || atReady.running != 4 {
			t.Errorf("at READY=1 the runtime ran %d of %d containers of the node (want 4 of 4; err %v)", atReady.running, atReady.total, atReady.err)
		}
		atReady.Unlock()
		msgs := sup.snapshot()
		if st, _ := msgs[ready].status(); st != "Running 2 pods" {
			t.Errorf("READY=1 came with STATUS=%q, want Running 2 pods", st)
		}
		var before []string
		for _, m := range msgs[:ready] {
			if st, ok := m.status(); ok {
				before = append(before, st)
			}
		}
		if len(before) == 0 {
			t.Errorf("no STATUS= before READY=1:%s", sup.describe(msgs))
		}
		if !a.logContains("ignored: topologyManagerPolicy (minikubelet does not implement them)") {
			t.Errorf("no warning naming the config file's ignored field")
		}
		if !a.logContains("rotateCertificates (--rotate-certificates) has no effect standalone") {
			t.Errorf("no line saying rotateCertificates has no effect standalone")
		}

		// A notable change: a pod goes.
		a.removeManifest("beta.yaml")
		sup.waitForStatus(60*time.Second, ready+1, "Running 1 pod")

		// The watchdog's rhythm after READY=1: one ping every second.
		polltest.Until(t, 30*time.Second, "6 watchdog pings after READY=1", func() (bool, string) {
			return len(pings(sup.snapshot()[ready:])) >= 6, ""
		})
		p := pings(sup.snapshot()[ready:])
		for i := 1; i < len(p); i++ {
			gap := p[i].Sub(p[i-1])
			if gap < watchdog/4 || gap > watchdog*3/4 {
				t.Errorf("watchdog ping %d came %v after the one before; want about %v", i, gap.Round(time.Millisecond), watchdog/2)
			}
		}
		for _, m := range sup.snapshot() {
			if m.has("READY=1") && m.at.After(msgs[ready].at) {
				t.Errorf("READY=1 sent twice")
			}
		}

		a.stop()
		sup.waitFor(10*time.Second, "STOPPING=1")
		t.Logf("notifications other than WATCHDOG=1:%s", sup.describe(sup.snapshot()))
	})
}

// While the runtime does not answer, the agent says so and is not ready.
func TestNotifyWaitingForRuntime(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	t.Parallel()
	// The agent never reaches a runtime; the bed's first one serves the
	// cleanup only.
	rt := env.runtimes[0]
	sup := newSupervisor(t)
	missing := "unix://" + filepath.Join(t.TempDir(), "no-runtime.sock")
	startAgentWith(t, rt, agentOptions{
		args:          []string{"--container-runtime-endpoint", missing},
		env:           []string{"NOTIFY_SOCKET=" + sup.socket},
		noWaitHealthy: true,
	})
	sup.waitForStatus(30*time.Second, 0, "Waiting for the container runtime at "+missing)
	for _, m := range sup.snapshot() {
		if m.has("READY=1") {
			t.Errorf("READY=1 without a runtime")
		}
	}
}

// pings returns the arrival times of WATCHDOG=1.
func pings(msgs []notification) []time.Time {
	var out []time.Time
	for _, m := range msgs {
		if m.has("WATCHDOG=1") {
			out = append(out, m.at)
		}
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
