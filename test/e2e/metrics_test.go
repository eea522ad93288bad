package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// TestKubeletMetricNames: once a pod runs, /metrics serves the kubelet's
// metric names that dashboards and the kube-prometheus kubelet alerts
// read, with values that follow what the node did: the node's name, the
// running pod and containers, the pod's start and syncs, the PLEG's
// relists (relist mode: every second) and the CRI calls made.
func TestKubeletMetricNames(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt, "--pleg-mode", "relist")
		a.writeManifest("web.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: %[1]s, command: ["sleep", "3600"]}
  - {name: b, image: %[1]s, command: ["sleep", "3600"]}
`, env.busybox))
		a.waitRunning("web", 60*time.Second)
		atLeast := []struct {
			name, labels string
			min          float64
		}{
			{"kubelet_node_name", fmt.Sprintf(`{node=%q}`, a.node), 1},
			{"kubelet_running_pods", "", 1},
			{"kubelet_running_containers", `{container_state="running"}`, 2},
			{"kubelet_pod_start_duration_seconds_count", "", 1},
			{"kubelet_pod_worker_duration_seconds_count", `{operation_type="create"}`, 1},
			{"kubelet_pleg_relist_duration_seconds_count", "", 2},
			{"kubelet_pleg_relist_interval_seconds_count", "", 1},
			{"kubelet_runtime_operations_total", `{operation_type="run_podsandbox"}`, 1},
			{"kubelet_runtime_operations_total", `{operation_type="start_container"}`, 2},
			{"kubelet_runtime_operations_total", `{operation_type="list_podsandbox"}`, 1},
		}
		polltest.Until(t, 30*time.Second, "the kubelet's metrics", func() (bool, string) {
			for _, m := range atLeast {
				if v, ok := a.metric(m.name, m.labels); !ok || v < m.min {
					return false, fmt.Sprintf("%s%s = %v (present %v), want at least %v", m.name, m.labels, v, ok, m.min)
				}
			}
			return true, ""
		})
		// The kubelet's counts are exact for what this node runs.
		if v, _ := a.metric("kubelet_running_pods", ""); v != 1 {
			t.Errorf("kubelet_running_pods = %v, want 1", v)
		}
		if v, _ := a.metric("kubelet_pod_start_duration_seconds_count", ""); v != 1 {
			t.Errorf("kubelet_pod_start_duration_seconds_count = %v, want 1 (one pod started)", v)
		}
	})
}

// TestProbeMetrics: /metrics/probes counts each probe of each container
// by result under the kubelet's names and labels, and drops a probe's
// series when its pod goes.
func TestProbeMetrics(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("probed.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
    livenessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
`, env.busybox))
		pod := a.waitRunning("probed", 60*time.Second)
		series := func(probeType, result string) string {
			return fmt.Sprintf(`prober_probe_total{container="app",namespace=%q,pod=%q,pod_uid=%q,probe_type=%q,result=%q} `,
				pod.Namespace, pod.Name, pod.UID, probeType, result)
		}
		polltest.Until(t, 30*time.Second, "both probes counted on /metrics/probes", func() (bool, string) {
			body, code, err := a.get(a.port, "/metrics/probes")
			if err != nil || code != 200 {
				return false, fmt.Sprintf("HTTP %d %v", code, err)
			}
			for _, typ := range []string{"Readiness", "Liveness"} {
				v, ok := sampleValue(body, series(typ, "successful"))
				if !ok || v < 2 {
					return false, body
				}
				if _, ok := sampleValue(body, fmt.Sprintf(`prober_probe_duration_seconds_count{container="app",namespace=%q,pod=%q,probe_type=%q} `, pod.Namespace, pod.Name, typ)); !ok {
					return false, body
				}
			}
			return true, ""
		})
		a.removeManifest("probed.yaml")
		polltest.Until(t, 30*time.Second, "the pod's probe series gone", func() (bool, string) {
			body, _, err := a.get(a.port, "/metrics/probes")
			return err == nil && !strings.Contains(body, string(pod.UID)), body
		})
	})
}

// sampleValue finds the sample whose line starts with prefix (name,
// labels and a space) in a Prometheus text body.
func sampleValue(body, prefix string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}
