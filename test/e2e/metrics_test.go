package e2e

import (
	"fmt"
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
