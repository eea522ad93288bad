package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// criLogTime returns the time of the first line of a CRI-format log that
// holds text ("<RFC3339Nano> <stream> <P|F> <text>").
func criLogTime(t *testing.T, log, text string) time.Time {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		ts, rest, ok := strings.Cut(line, " ")
		if ok && strings.Contains(rest, text) {
			when, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			return when
		}
	}
	t.Fatalf("no log line holds %q in:\n%s", text, log)
	return time.Time{}
}

// Sidecars (init containers with restartPolicy Always) start in order
// before the regular containers, keep running beside them, are restarted
// when they exit, and at termination are stopped after the regular
// containers.
func TestSidecars(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("sidecar.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: sidecar
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: setup
    image: %[1]s
    command: ["true"]
  - name: proxy
    image: %[1]s
    restartPolicy: Always
    command: ["sh", "-c", "trap 'echo proxy-term; exit 0' TERM; echo proxy-up; while true; do sleep 1 & wait; done"]
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "trap 'echo app-term; sleep 1; echo app-done; exit 0' TERM; echo app-up; while true; do sleep 1 & wait; done"]
`, env.busybox))
		pod := a.waitRunning("sidecar", 60*time.Second)
		if pod.Status.Phase != "Running" {
			t.Errorf("phase %s, want Running", pod.Status.Phase)
		}
		setup, proxy := pod.Status.InitContainerStatuses[0], pod.Status.InitContainerStatuses[1]
		if setup.State.Terminated == nil || setup.State.Terminated.ExitCode != 0 {
			t.Errorf("setup: %+v, want completed", setup.State)
		}
		if proxy.State.Running == nil {
			t.Fatalf("proxy: %+v, want running beside the app", proxy.State)
		}
		app := containerStatus(pod, "app")
		if app.State.Running.StartedAt.Before(&proxy.State.Running.StartedAt) {
			t.Errorf("app started %v before its sidecar %v", app.State.Running.StartedAt, proxy.State.Running.StartedAt)
		}
		for _, c := range pod.Status.Conditions {
			if (c.Type == "Initialized" || c.Type == "Ready") && c.Status != "True" {
				t.Errorf("condition %s = %s, want True", c.Type, c.Status)
			}
		}

		// Delete: the app is stopped first; the sidecar only after it exits.
		open := func(name string) *os.File {
			f, err := os.Open(a.containerLog(pod, name, 0))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}
		appLog, proxyLog := open("app"), open("proxy")
		a.removeManifest("sidecar.yaml")
		polltest.Until(t, 30*time.Second, "sidecar pod gone", func() (bool, string) {
			return a.pod("sidecar") == nil && !sandboxExists(t.Context(), t, rt, pod.Name), "still there"
		})
		appOut, _ := io.ReadAll(appLog)
		proxyOut, _ := io.ReadAll(proxyLog)
		appDone := criLogTime(t, string(appOut), "app-done")
		proxyTerm := criLogTime(t, string(proxyOut), "proxy-term")
		if proxyTerm.Before(appDone) {
			t.Errorf("the sidecar got SIGTERM at %v, before the app exited at %v", proxyTerm, appDone)
		}
	})
}

// Lifecycle hooks: postStart (exec) runs before the container is reported
// started and can be seen by it; preStop runs before SIGTERM, as exec,
// httpGet (to a server on the node) or sleep, within the grace period; a
// failing postStart kills the container.
func TestLifecycleHooks(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		var mu sync.Mutex
		var hits []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			hits = append(hits, r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]

		a := startAgent(t, rt)
		a.writeManifest("hooks.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: hooks
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 4
  containers:
  - name: exec
    image: %[1]s
    command: ["sh", "-c", "trap 'echo got-term; exit 0' TERM; while [ ! -f /tmp/hooked ]; do sleep 0.1; done; cat /tmp/hooked; while true; do sleep 1 & wait; done"]
    lifecycle:
      postStart:
        exec:
          command: ["sh", "-c", "echo post-start-ran > /tmp/hooked"]
      preStop:
        exec:
          command: ["sh", "-c", "echo pre-stop-ran > /proc/1/fd/1"]
  - name: http
    image: %[1]s
    command: ["sleep", "3600"]
    lifecycle:
      preStop:
        httpGet:
          host: 127.0.0.1
          port: %[2]s
          path: /pre-stop
  - name: sleeper
    image: %[1]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1 & wait; done"]
    lifecycle:
      preStop:
        sleep:
          seconds: 2
`, env.busybox, port))
		pod := a.waitRunning("hooks", 60*time.Second)
		logPath := a.containerLog(pod, "exec", 0)
		polltest.Until(t, 10*time.Second, "the container saw its postStart hook's file", func() (bool, string) {
			b, err := os.ReadFile(logPath)
			return err == nil && strings.Contains(string(b), "post-start-ran"), fmt.Sprintf("%q %v", b, err)
		})
		execLog, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer execLog.Close()

		start := time.Now()
		a.removeManifest("hooks.yaml")
		polltest.Until(t, 30*time.Second, "hooks pod gone", func() (bool, string) {
			return a.pod("hooks") == nil && !sandboxExists(t.Context(), t, rt, pod.Name), "still there"
		})
		took := time.Since(start)
		out, _ := io.ReadAll(execLog)
		preStop, term := criLogTime(t, string(out), "pre-stop-ran"), criLogTime(t, string(out), "got-term")
		if term.Before(preStop) {
			t.Errorf("SIGTERM (%v) came before the preStop hook ran (%v)", term, preStop)
		}
		mu.Lock()
		if len(hits) != 1 || hits[0] != "/pre-stop" {
			t.Errorf("preStop httpGet hits = %v, want one GET /pre-stop", hits)
		}
		mu.Unlock()
		if took < 2*time.Second {
			t.Errorf("termination took %v, less than the preStop sleep of 2s", took)
		}

		// A failing postStart kills the container; under Never the pod fails.
		a.writeManifest("bad-hook.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: bad-hook
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec:
          command: ["sh", "-c", "exit 3"]
`, env.busybox))
		polltest.Until(t, 30*time.Second, "failed postStart kills the container", func() (bool, string) {
			p := a.pod("bad-hook")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "main")
			return cs != nil && cs.State.Terminated != nil && p.Status.Phase == "Failed", describe(p)
		})
		if line := a.logLineWith("PostStartHook"); line == "" {
			t.Errorf("the failed postStart hook was not logged")
		}
	})
}
