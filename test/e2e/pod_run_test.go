package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// A two-container pod with its own network reaches Running with a pod IP;
// command, args, env and workingDir reach the containers; logs land where
// the kubelet puts them; and the sandbox and containers carry the kubelet's
// labels.
func TestTwoContainerPodRuns(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("duo.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: duo
  labels:
    team: e2e
spec:
  containers:
  - name: greeter
    image: %[1]s
    command: ["sh", "-c"]
    args: ["echo \"$GREETING from $(pwd) on $(NODE)\"; exec sleep 3600"]
    workingDir: /tmp
    env:
    - name: GREETING
      value: hello
    - name: NODE
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    ports:
    - containerPort: 8080
  - name: sleeper
    image: %[1]s
    command: ["sleep", "3600"]
`, env.busybox))
		pod := a.waitRunning("duo", 60*time.Second)

		if pod.Namespace != "default" {
			t.Errorf("namespace = %q, want default", pod.Namespace)
		}
		if pod.Status.Phase != "Running" {
			t.Errorf("phase = %s, want Running", pod.Status.Phase)
		}
		if pod.Status.PodIP == "" || pod.Status.PodIP == pod.Status.HostIP {
			t.Errorf("podIP = %q, hostIP = %q: want a pod IP of its own", pod.Status.PodIP, pod.Status.HostIP)
		}
		if pod.Status.StartTime == nil {
			t.Error("startTime not set")
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if !strings.HasPrefix(cs.ContainerID, "containerd://") || !cs.Ready || cs.RestartCount != 0 {
				t.Errorf("container %s: id=%q ready=%v restarts=%d", cs.Name, cs.ContainerID, cs.Ready, cs.RestartCount)
			}
		}

		// The greeter's log, where the kubelet would write it.
		logPath := a.containerLog(pod, "greeter", 0)
		want := "hello from /tmp on " + a.node
		polltest.Until(t, 10*time.Second, "greeter log", func() (bool, string) {
			b, err := os.ReadFile(logPath)
			return err == nil && strings.Contains(string(b), want), fmt.Sprintf("%q (err %v)", b, err)
		})

		// The runtime's own view: labels on the sandbox and the containers.
		ctx := context.Background()
		sandboxes, containers, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxes) != 1 || len(containers) != 2 {
			t.Fatalf("runtime holds %d sandboxes and %d containers, want 1 and 2", len(sandboxes), len(containers))
		}
		sb := sandboxes[0]
		wantLabels := map[string]string{
			"io.kubernetes.pod.name":      pod.Name,
			"io.kubernetes.pod.namespace": "default",
			"io.kubernetes.pod.uid":       string(pod.UID),
			"team":                        "e2e",
		}
		for k, v := range wantLabels {
			if sb.Labels[k] != v {
				t.Errorf("sandbox label %s = %q, want %q", k, sb.Labels[k], v)
			}
		}
		for _, c := range containers {
			name := c.GetMetadata().GetName()
			for k, v := range map[string]string{
				"io.kubernetes.pod.name":       pod.Name,
				"io.kubernetes.pod.namespace":  "default",
				"io.kubernetes.pod.uid":        string(pod.UID),
				"io.kubernetes.container.name": name,
			} {
				if c.Labels[k] != v {
					t.Errorf("container %s label %s = %q, want %q", name, k, c.Labels[k], v)
				}
			}
			if c.Annotations["io.kubernetes.container.hash"] == "" {
				t.Errorf("container %s has no spec hash annotation", name)
			}
			if cs := containerStatus(pod, name); cs == nil || cs.ContainerID != "containerd://"+c.Id {
				t.Errorf("container %s: /pods says %v, runtime says %s", name, cs, c.Id)
			}
		}
	})
}

// A host-network pod runs in the node's network namespace and reports the
// node's IP as its own.
func TestHostNetworkPod(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("host.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: host
spec:
  hostNetwork: true
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, env.busybox))
		pod := a.waitRunning("host", 60*time.Second)
		if pod.Status.PodIP == "" || pod.Status.PodIP != pod.Status.HostIP {
			t.Errorf("podIP = %q, hostIP = %q: a host-network pod has the node's IP", pod.Status.PodIP, pod.Status.HostIP)
		}
		ctx := context.Background()
		sandboxes, _, err := runtimePods(ctx, rt, a.node)
		if err != nil || len(sandboxes) != 1 {
			t.Fatalf("sandboxes: %v, %v", sandboxes, err)
		}
		resp, err := rt.Runtime().PodSandboxStatus(ctx, sandboxes[0].Id, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetStatus().GetLinux().GetNamespaces().GetOptions().GetNetwork(); got != runtimeapi.NamespaceMode_NODE {
			t.Errorf("sandbox network namespace mode = %v, want NODE", got)
		}
	})
}
