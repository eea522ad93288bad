package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The streaming benchmarks (issue 18.8) run the agent ($MINIKUBELET_BIN:
// make bench uses bin/minikubelet, not the race build) against the bed's
// containerd 2.x, as the rest of make bench does. Each sets up one agent
// and one pod, then times only the streaming.

// benchRuntime is the bed's containerd 2.x.
func benchRuntime(b *testing.B) *ctrdtest.Containerd {
	b.Helper()
	if env.skip != "" {
		b.Skip(env.skip)
	}
	for _, rt := range env.runtimes {
		if strings.HasPrefix(rt.Name(), "containerd-2") {
			return rt
		}
	}
	b.Skip("the bed has no containerd 2.x")
	return nil
}

// benchStreamPod starts an agent and the streaming pod.
func benchStreamPod(b *testing.B) (*agent, *v1.Pod) {
	b.Helper()
	return startStreamPod(b, benchRuntime(b), "-v", "1")
}

// BenchmarkStreamExecRoundTrip times one exec of `true` from the request
// to its exit status, over SPDY as the apiserver reaches the kubelet:
// through the agent (CRI Exec, then the session proxied to the runtime's
// streaming server), and straight to the runtime (CRI Exec, then the
// session with the runtime's streaming server), the floor the agent adds
// to.
func BenchmarkStreamExecRoundTrip(b *testing.B) {
	a, pod := benchStreamPod(b)
	ctx := context.Background()
	q := execQuery(false, false, "true")
	b.Run("agent", func(b *testing.B) {
		u := a.streamURL("exec", pod, "main", q)
		for b.Loop() {
			ex, err := remotecommand.NewSPDYExecutor(a.restConfig(), http.MethodPost, u)
			if err != nil {
				b.Fatal(err)
			}
			if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runtime", func(b *testing.B) {
		id := containerIDOf(b, pod, "main")
		for b.Loop() {
			resp, err := a.rt.Runtime().Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true, Stderr: true})
			if err != nil {
				b.Fatal(err)
			}
			u, err := url.Parse(resp.GetUrl())
			if err != nil {
				b.Fatal(err)
			}
			ex, err := remotecommand.NewSPDYExecutor(a.restConfig(), http.MethodPost, u)
			if err != nil {
				b.Fatal(err)
			}
			if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStreamPortForward times bytes echoed by the pod through a
// port-forward of the agent, over SPDY and over SPDY in a WebSocket, and
// through one straight to the runtime's streaming server over SPDY, the
// floor (the bytes of an op go both ways: MB/s is each way's).
func BenchmarkStreamPortForward(b *testing.B) {
	a, pod := benchStreamPod(b)
	const size = 4 << 20
	sandbox := func() *url.URL {
		sandboxes, _, err := runtimePods(context.Background(), a.rt, a.node)
		if err != nil || len(sandboxes) != 1 {
			b.Fatalf("the pod's sandbox: %d sandboxes, %v", len(sandboxes), err)
		}
		resp, err := a.rt.Runtime().PortForward(context.Background(), &runtimeapi.PortForwardRequest{PodSandboxId: sandboxes[0].GetId()})
		if err != nil {
			b.Fatal(err)
		}
		u, err := url.Parse(resp.GetUrl())
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	for _, run := range []struct {
		name, proto string
		url         func() *url.URL
	}{
		{"agent-spdy", "spdy", func() *url.URL { return a.streamURL("portForward", pod, "", nil) }},
		{"agent-websocket", "websocket", func() *url.URL { return a.streamURL("portForward", pod, "", nil) }},
		{"runtime-spdy", "spdy", sandbox},
	} {
		b.Run(run.name, func(b *testing.B) {
			local, stop := forward(b, run.url(), run.proto, 7000)
			defer stop()
			b.SetBytes(size)
			for b.Loop() {
				if err := echoThrough(local, size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamExecMemory opens b.N exec sessions (a `cat` each, its
// stdin kept open) through the agent and keeps them open: ns/op is the
// time to open one, RSS-B/session how much the agent's resident memory
// grew per open session. Run it with a fixed count (-benchtime=100x): the
// slope over a handful of sessions is noise. Over SPDY (spdy), the agent
// carries the session to the runtime's streaming server as it comes; over
// WebSocket (websocket, the v5.channel.k8s.io protocol that kubectl
// speaks and a v1.36 apiserver passes through to a node that declares
// ExtendWebSocketsToKubelet), the agent ends the WebSocket and runs the
// session against the runtime over SPDY itself.
func BenchmarkStreamExecMemory(b *testing.B) {
	a, pod := benchStreamPod(b)
	u := a.streamURL("exec", pod, "main", execQuery(true, false, "sh", "-c", "echo up; exec cat"))
	b.Run("spdy", func(b *testing.B) {
		execMemory(b, a, func() (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(a.restConfig(), http.MethodPost, u)
		})
	})
	b.Run("websocket", func(b *testing.B) {
		execMemory(b, a, func() (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(a.restConfig(), http.MethodGet, u.String())
		})
	})
}

// execMemory opens b.N sessions with executors of newExecutor, after one
// warm-up, and reports the agent's RSS growth per session.
func execMemory(b *testing.B, a *agent, newExecutor func() (remotecommand.Executor, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	open := func() {
		up := make(chan struct{})
		in, _ := io.Pipe() // never written, never closed: stdin stays open
		ex, err := newExecutor()
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: &signalWriter{once: &sync.Once{}, ch: up}, Stderr: io.Discard})
		}()
		select {
		case <-up:
		case <-time.After(30 * time.Second):
			b.Fatal("an exec session did not start in 30s")
		}
	}
	// A warm-up session, so that what every session shares is counted
	// before the first measure.
	open()
	before := rssOf(b, a.cmd.Process.Pid)
	b.ResetTimer()
	for range b.N {
		open()
	}
	b.StopTimer()
	after := rssOf(b, a.cmd.Process.Pid)
	b.ReportMetric(float64(after-before)/float64(b.N), "RSS-B/session")
	b.ReportMetric(float64(after), "RSS-B")
	if dir := os.Getenv("MINIKUBELET_BENCH_PROFILES"); dir != "" {
		a.saveProfiles(b, dir, strings.ReplaceAll(b.Name(), "/", "_"))
	}
}

// signalWriter closes ch on the first write.
type signalWriter struct {
	once *sync.Once
	ch   chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

// rssOf is the resident memory of process pid, in bytes.
func rssOf(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// saveProfiles writes the agent's heap profile (after a GC), its text form
// with the runtime's MemStats and every goroutine's stack into dir, named
// after name: what a memory benchmark leaves to look at when
// $MINIKUBELET_BENCH_PROFILES names a directory.
func (a *agent) saveProfiles(b *testing.B, dir, name string) {
	b.Helper()
	for what, file := range map[string]string{"heap?gc=1": "heap.pprof", "heap?debug=1": "heap.txt", "goroutine?debug=1": "goroutine.txt"} {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", a.streamPort(), what)) //nolint:noctx // the agent's own socket, forwarded
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"."+file), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
