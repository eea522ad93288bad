package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The probe tests run test/images/probeserver, whose HTTP, TCP, gRPC and
// exec answers the test flips through its /set endpoint on the pod's IP.

// setProbeState changes a probeserver's state, e.g. "http=500".
func setProbeState(t *testing.T, pod *v1.Pod, port int, query string) {
	t.Helper()
	url := fmt.Sprintf("http://%s:%d/set?%s", pod.Status.PodIP, port, query)
	polltest.Until(t, 10*time.Second, "probeserver accepts "+query, func() (bool, string) {
		resp, err := http.Get(url) //nolint:noctx // a test's own URL
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("HTTP %d %s", resp.StatusCode, body)
	})
}

// waitReady waits until a container's ready flag and the pod's Ready
// condition are want.
func (a *agent) waitReady(name, container string, want bool, timeout time.Duration) *v1.Pod {
	a.t.Helper()
	var pod *v1.Pod
	polltest.Until(a.t, timeout, fmt.Sprintf("%s/%s ready=%v", name, container, want), func() (bool, string) {
		pod = a.pod(name)
		if pod == nil {
			return false, "not on /pods"
		}
		cs := containerStatus(pod, container)
		if cs == nil || cs.State.Running == nil {
			return false, describe(pod)
		}
		podReady := podCondition(pod, v1.PodReady) == v1.ConditionTrue
		return cs.Ready == want && (podReady == want || !want), fmt.Sprintf("%s ready=%v podReady=%v", describe(pod), cs.Ready, podReady)
	})
	return pod
}

func podCondition(pod *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// TestProbeHandlersToggleReadiness runs one container per handler (httpGet
// with a header, tcpSocket, gRPC with a service name, exec), each with a
// readiness probe, and flips each answer both ways.
func TestProbeHandlersToggleReadiness(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("probes.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: probes
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: http
    image: %[1]s
    args: ["serve", "-http", ":8080", "-tcp", ":8081", "-grpc", ":8082", "header=X-Probe:yes"]
    ports:
    - name: web
      containerPort: 8080
    readinessProbe:
      httpGet: {path: /healthz, port: web, httpHeaders: [{name: X-Probe, value: "yes"}]}
      periodSeconds: 1
      failureThreshold: 1
  - name: tcp
    image: %[1]s
    args: ["serve", "-http", ":8180", "-tcp", ":8181", "-grpc", ":8182"]
    readinessProbe:
      tcpSocket: {port: 8181}
      periodSeconds: 1
      failureThreshold: 1
  - name: grpc
    image: %[1]s
    args: ["serve", "-http", ":8280", "-tcp", ":8281", "-grpc", ":8282"]
    readinessProbe:
      grpc: {port: 8282, service: probe}
      periodSeconds: 1
      failureThreshold: 1
  - name: exec
    image: %[1]s
    args: ["serve", "-http", ":8380", "-tcp", ":8381", "-grpc", ":8382"]
    readinessProbe:
      exec: {command: ["/probeserver", "check"]}
      periodSeconds: 1
      failureThreshold: 1
`, env.probeserver))
		a.waitRunning("probes", 90*time.Second)
		var pod *v1.Pod
		for _, c := range []string{"http", "tcp", "grpc", "exec"} {
			pod = a.waitReady("probes", c, true, 30*time.Second)
		}
		for _, tc := range []struct {
			container  string
			port       int
			fail, pass string
		}{
			{"http", 8080, "http=503", "http=200"},
			{"http", 8080, "header=X-Other:1", "header=X-Probe:yes"}, // the probe's header is sent
			{"tcp", 8180, "tcp=off", "tcp=on"},
			{"grpc", 8280, "grpc=NOT_SERVING", "grpc=SERVING"},
			{"exec", 8380, "exec=1", "exec=0"},
		} {
			setProbeState(t, pod, tc.port, tc.fail)
			a.waitReady("probes", tc.container, false, 20*time.Second)
			if st := podCondition(a.pod("probes"), v1.ContainersReady); st != v1.ConditionFalse {
				t.Errorf("%s not ready but ContainersReady is %q", tc.container, st)
			}
			setProbeState(t, pod, tc.port, tc.pass)
			a.waitReady("probes", tc.container, true, 20*time.Second)
		}
		if got := containerStatus(a.pod("probes"), "exec").RestartCount; got != 0 {
			t.Errorf("readiness failures restarted a container %d times", got)
		}
		body, _, err := a.get(a.port, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`minikubelet_prober_probe_total{probe_type="Readiness",result="failed"}`,
			`minikubelet_prober_probe_total{probe_type="Readiness",result="successful"}`,
			`minikubelet_prober_probe_duration_seconds_count{probe_type="Readiness"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// TestLivenessProbeRestartsContainer: a failing liveness probe kills the
// container with the probe's grace period and starts it again, even under
// restartPolicy OnFailure for an app that exits 0 on SIGTERM, as the
// kubelet does.
func TestLivenessProbeRestartsContainer(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("live.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: live
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: %[1]s
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 2
`, env.probeserver))
		pod := a.waitRunning("live", 90*time.Second)
		before := containerStatus(pod, "app")
		time.Sleep(3 * time.Second) // a passing liveness probe restarts nothing
		if cs := containerStatus(a.pod("live"), "app"); cs.RestartCount != 0 || cs.ContainerID != before.ContainerID {
			t.Fatalf("healthy container restarted: %+v", cs)
		}

		setProbeState(t, pod, 8080, "http=500")
		polltest.Until(t, 30*time.Second, "the container restarted after failing liveness", func() (bool, string) {
			p := a.pod("live")
			cs := containerStatus(p, "app")
			return cs != nil && cs.RestartCount == 1 && cs.State.Running != nil && cs.LastTerminationState.Terminated != nil, describe(p)
		})
		// The new container starts with a fresh state: healthy, no more
		// restarts.
		time.Sleep(3 * time.Second)
		cs := containerStatus(a.pod("live"), "app")
		if cs.RestartCount != 1 || cs.State.Running == nil {
			t.Errorf("after the restart: restarts %d, %s", cs.RestartCount, describe(a.pod("live")))
		}
		if !a.logContains("Liveness probe failed") {
			t.Error("the agent log does not say why the container was killed")
		}

		// A container that ignores SIGTERM is SIGKILLed after the probe's
		// grace period (2s), not the pod's (30s).
		a.writeManifest("stubborn.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: stubborn
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "trap '' TERM; touch /tmp/healthy; sleep 3; rm /tmp/healthy; while true; do sleep 1; done"]
    livenessProbe:
      exec: {command: ["test", "-f", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 2
`, env.busybox))
		polltest.Until(t, 60*time.Second, "the stubborn container killed and restarted", func() (bool, string) {
			p := a.pod("stubborn")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "app")
			return cs != nil && cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil, describe(p)
		})
		term := containerStatus(a.pod("stubborn"), "app").LastTerminationState.Terminated
		// 3s healthy, up to 2s to notice, 2s of grace; the pod's 30s
		// would make it over 33s.
		if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran > 15*time.Second || term.ExitCode != 137 {
			t.Errorf("killed after running %v with exit code %d; want SIGKILL (137) within the probe's 2s grace", ran, term.ExitCode)
		}
	})
}

// TestStartupProbeGatesLivenessAndReadiness: while the startup probe fails,
// a liveness probe that would fail does not run (nothing is restarted) and
// the container is neither started nor ready; once it passes, both run.
func TestStartupProbeGatesLivenessAndReadiness(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("startup.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: startup
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %[1]s
    args: ["serve", "startup=500", "exec=1"]
    startupProbe:
      httpGet: {path: /startup, port: 8080}
      periodSeconds: 1
      failureThreshold: 600
    livenessProbe:
      exec: {command: ["/probeserver", "check"]}
      periodSeconds: 1
      failureThreshold: 1
    readinessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
`, env.probeserver))
		pod := a.waitRunning("startup", 90*time.Second)
		polltest.Holds(t, 4*time.Second, "not started, not ready and not restarted before the startup probe passes", func() (bool, string) {
			cs := containerStatus(a.pod("startup"), "app")
			return cs.RestartCount == 0 && !cs.Ready && cs.Started != nil && !*cs.Started, fmt.Sprintf("restarts %d ready %v started %v", cs.RestartCount, cs.Ready, cs.Started)
		})
		setProbeState(t, pod, 8080, "exec=0&startup=200")
		pod = a.waitReady("startup", "app", true, 20*time.Second)
		cs := containerStatus(pod, "app")
		if cs.Started == nil || !*cs.Started || cs.RestartCount != 0 {
			t.Errorf("after the startup probe passed: started %v restarts %d", cs.Started, cs.RestartCount)
		}
		// Liveness now runs: failing it restarts the container.
		setProbeState(t, pod, 8080, "exec=1")
		polltest.Until(t, 30*time.Second, "restart after liveness failure", func() (bool, string) {
			p := a.pod("startup")
			return containerStatus(p, "app").RestartCount >= 1, describe(p)
		})
	})
}

// TestProbeTimeouts: a probe that answers after its timeoutSeconds fails,
// for exec (the runtime's timeout) and httpGet (the agent's).
func TestProbeTimeouts(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("slow.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: slow
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: exec
    image: %[1]s
    args: ["serve", "-http", ":8080", "-tcp", ":8081", "-grpc", ":8082"]
    readinessProbe:
      exec: {command: ["/probeserver", "check"]}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
  - name: http
    image: %[1]s
    args: ["serve", "-http", ":8180", "-tcp", ":8181", "-grpc", ":8182"]
    readinessProbe:
      httpGet: {path: /healthz, port: 8180}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
`, env.probeserver))
		a.waitRunning("slow", 90*time.Second)
		var pod *v1.Pod
		for _, c := range []string{"exec", "http"} {
			pod = a.waitReady("slow", c, true, 30*time.Second)
		}
		for _, tc := range []struct {
			container string
			port      int
		}{{"exec", 8080}, {"http", 8180}} {
			setProbeState(t, pod, tc.port, "delay=3s")
			a.waitReady("slow", tc.container, false, 20*time.Second)
			setProbeState(t, pod, tc.port, "delay=0s")
			a.waitReady("slow", tc.container, true, 20*time.Second)
		}
	})
}
