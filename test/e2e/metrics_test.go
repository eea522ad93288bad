package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// TestKubeletMetricNames: once a pod runs, /metrics serves the kubelet's
// metric names that dashboards and the kube-prometheus kubelet alerts
// read, with values that follow what the node did: the node's name, the
// running pod and containers, the pod's start and syncs, the PLEG's
// relists (relist mode: every second) and the CRI calls made. The agent
// gets a containerd of its own: the kubelet's running counts are the
// runtime's, and the shared ones run other tests' pods.
func TestKubeletMetricNames(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, shared *ctrdtest.Containerd) {
		rt := startPrivateRuntime(t, shared.Name())
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

// TestSummaryFilesystems: /stats/summary reports the filesystems against
// the real runtime: the node's, containerd's image filesystem, a
// container's writable layer and logs, an emptyDir it wrote 1 MiB to, and
// the pod's ephemeral storage, which counts them.
func TestSummaryFilesystems(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("disk.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: disk}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "head -c 1048576 /dev/zero > /scratch/blob; head -c 65536 /dev/zero > /tmp/layer; echo wrote; exec sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
`, env.busybox))
		pod := a.waitRunning("disk", 60*time.Second)
		var got statsapi.PodStats
		var node statsapi.NodeStats
		polltest.Until(t, 45*time.Second, "the pod's filesystems on /stats/summary", func() (bool, string) {
			body, code, err := a.get(a.port, "/stats/summary")
			if err != nil || code != 200 {
				return false, fmt.Sprintf("HTTP %d %v", code, err)
			}
			var s statsapi.Summary
			if err := json.Unmarshal([]byte(body), &s); err != nil {
				t.Fatal(err)
			}
			node = s.Node
			for _, p := range s.Pods {
				if p.PodRef.UID == string(pod.UID) {
					got = p
				}
			}
			if len(got.Containers) != 1 || len(got.VolumeStats) == 0 || got.EphemeralStorage == nil {
				return false, body
			}
			// The runtime's figures are read at most every FsMaxAge (10 s)
			// and refreshed in the background; containerd measures its
			// image filesystem that often too, from 0 at its start.
			if r := node.Runtime; r == nil || r.ImageFs == nil || r.ImageFs.UsedBytes == nil || *r.ImageFs.UsedBytes == 0 {
				return false, body
			}
			// The pod's directories are measured in the background too,
			// at most every FsMaxAge: a read may still show the emptyDir
			// from before the container wrote its blob.
			for _, v := range got.VolumeStats {
				if v.Name == "scratch" && (v.UsedBytes == nil || *v.UsedBytes < 1<<20) {
					return false, body
				}
			}
			c := got.Containers[0]
			return c.Logs != nil && c.Logs.UsedBytes != nil && *c.Logs.UsedBytes > 0 && c.Rootfs != nil, body
		})
		if fs := node.Fs; fs == nil || fs.CapacityBytes == nil || *fs.CapacityBytes == 0 || fs.AvailableBytes == nil || fs.InodesFree == nil {
			t.Errorf("node fs = %+v", fs)
		}
		if r := node.Runtime; r == nil || r.ImageFs == nil || r.ImageFs.UsedBytes == nil || *r.ImageFs.UsedBytes == 0 || r.ImageFs.CapacityBytes == nil {
			t.Errorf("node runtime = %+v", r)
		}
		c := got.Containers[0]
		if c.Rootfs.UsedBytes == nil || c.Rootfs.CapacityBytes == nil {
			t.Errorf("rootfs of app = %+v", c.Rootfs)
		}
		var scratch *statsapi.VolumeStats
		for i := range got.VolumeStats {
			if got.VolumeStats[i].Name == "scratch" {
				scratch = &got.VolumeStats[i]
			}
		}
		if scratch == nil || *scratch.UsedBytes < 1<<20 || *scratch.InodesUsed < 2 || scratch.CapacityBytes == nil {
			t.Fatalf("volume stats = %+v", got.VolumeStats)
		}
		if e := got.EphemeralStorage; *e.UsedBytes < *scratch.UsedBytes+*c.Logs.UsedBytes || e.CapacityBytes == nil {
			t.Errorf("ephemeral storage = %+v, below the emptyDir's %d and the logs' %d bytes", e, *scratch.UsedBytes, *c.Logs.UsedBytes)
		}
	})
}
