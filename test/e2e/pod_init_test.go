package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Init containers run one after another, each to success, before the
// regular containers start; a failing one under restartPolicy Never fails
// the pod without starting them.
func TestInitContainersRunFirst(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("init.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: init
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: first
    image: %[1]s
    command: ["sh", "-c", "sleep 1"]
  - name: second
    image: %[1]s
    command: ["true"]
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
`, env.busybox))
		pod := a.waitRunning("init", 60*time.Second)
		first, second := pod.Status.InitContainerStatuses[0], pod.Status.InitContainerStatuses[1]
		for _, ic := range pod.Status.InitContainerStatuses {
			if ic.State.Terminated == nil || ic.State.Terminated.ExitCode != 0 || ic.State.Terminated.Reason != "Completed" {
				t.Fatalf("init container %s: %+v, want terminated Completed", ic.Name, ic.State)
			}
			if !ic.Ready {
				t.Errorf("init container %s completed but not ready (the kubelet reports a succeeded init container ready)", ic.Name)
			}
		}
		if second.State.Terminated.StartedAt.Before(&first.State.Terminated.FinishedAt) {
			t.Errorf("second init container started %v, before the first finished %v", second.State.Terminated.StartedAt, first.State.Terminated.FinishedAt)
		}
		main := containerStatus(pod, "main")
		if main.State.Running.StartedAt.Before(&second.State.Terminated.FinishedAt) {
			t.Errorf("main started %v, before the last init container finished %v", main.State.Running.StartedAt, second.State.Terminated.FinishedAt)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == "Initialized" && c.Status != "True" {
				t.Errorf("Initialized = %s, want True", c.Status)
			}
		}

		a.writeManifest("init-fails.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: init-fails
spec:
  restartPolicy: Never
  initContainers:
  - name: broken
    image: %[1]s
    command: ["sh", "-c", "exit 7"]
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
`, env.busybox))
		polltest.Until(t, 30*time.Second, "init-fails pod Failed", func() (bool, string) {
			p := a.pod("init-fails")
			if p == nil {
				return false, "not on /pods"
			}
			return p.Status.Phase == "Failed", describe(p)
		})
		p := a.pod("init-fails")
		if ic := p.Status.InitContainerStatuses[0]; ic.State.Terminated == nil || ic.State.Terminated.ExitCode != 7 {
			t.Errorf("broken init container: %+v, want exit code 7", ic.State)
		}
		if cs := containerStatus(p, "main"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "PodInitializing" || cs.ContainerID != "" {
			t.Errorf("main of a pod whose init failed: %+v (id %q), want waiting PodInitializing and never created", cs.State, cs.ContainerID)
		}
	})
}
