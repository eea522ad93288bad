package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/sources/file"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// editPod is the pod "edit" of two containers: a logs "a-started" and
// exits on SIGTERM; b runs bCommand.
func editPod(image, bCommand string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: edit
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: a
    image: %[1]s
    command: ["sh", "-c", "trap 'exit 0' TERM; echo a-started; while true; do sleep 1 & wait; done"]
  - name: b
    image: %[1]s
    command: ["sh", "-c", %[2]q]
`, image, bCommand)
}

// Editing one container's spec restarts that container only: the other
// keeps its container ID, the pod keeps its UID and its sandbox.
func TestEditRestartsOnlyChangedContainer(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("edit.yaml", editPod(env.busybox, "echo one; exec sleep 3600"))
		before := a.waitRunning("edit", 60*time.Second)
		ctx := context.Background()
		sandboxesBefore, _, err := runtimePods(ctx, rt, a.node)
		if err != nil || len(sandboxesBefore) != 1 {
			t.Fatalf("sandboxes before edit: %v %v", sandboxesBefore, err)
		}

		a.writeManifest("edit.yaml", editPod(env.busybox, "echo two; exec sleep 3600"))
		after := a.waitReplaced("edit", "b", before)

		if after.UID != before.UID {
			t.Errorf("UID changed from %s to %s on edit; static pod identity must be stable", before.UID, after.UID)
		}
		if got, want := containerStatus(after, "a").ContainerID, containerStatus(before, "a").ContainerID; got != want {
			t.Errorf("container a was restarted (%s -> %s) though its spec did not change", want, got)
		}
		if n := containerStatus(after, "b").RestartCount; n != 1 {
			t.Errorf("b restartCount = %d, want 1", n)
		}
		if containerStatus(after, "a").RestartCount != 0 {
			t.Errorf("a restartCount = %d, want 0", containerStatus(after, "a").RestartCount)
		}
		sandboxesAfter, containers, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxesAfter) != 1 || sandboxesAfter[0].Id != sandboxesBefore[0].Id {
			t.Errorf("sandbox replaced on a container-only edit: before %s, after %v", sandboxesBefore[0].Id, sandboxesAfter)
		}
		running := 0
		for _, c := range containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running++
			}
		}
		if running != 2 {
			t.Errorf("%d containers running after the edit, want 2", running)
		}
		// The new b logs to 1.log, as the kubelet numbers restarts.
		polltest.Until(t, 10*time.Second, "b's new log", func() (bool, string) {
			b, err := os.ReadFile(a.containerLog(after, "b", 1))
			return err == nil && strings.Contains(string(b), "two"), fmt.Sprintf("%q %v", b, err)
		})
	})
}

// Deleting a manifest terminates its pod: a container that handles SIGTERM
// gets it and the pod goes at once; one that ignores it is killed at the
// grace deadline; nothing of either pod is left in the runtime.
func TestDeleteTerminatesGracefully(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("polite.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: polite
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'echo got TERM; exit 0' TERM; echo ready; while true; do sleep 1 & wait; done"]
`, env.busybox))
		const grace = 3
		a.writeManifest("stubborn.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: stubborn
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap '' TERM; echo ready; while true; do sleep 1; done"]
`, grace, env.busybox))
		polite := a.waitRunning("polite", 60*time.Second)
		stubborn := a.waitRunning("stubborn", 60*time.Second)

		// Hold the polite container's log open: the agent removes the
		// file with the pod, and the open file still shows what was
		// written.
		logPath := a.containerLog(polite, "main", 0)
		polltest.Until(t, 10*time.Second, "polite ready", func() (bool, string) {
			b, err := os.ReadFile(logPath)
			return err == nil && strings.Contains(string(b), "ready"), fmt.Sprintf("%q %v", b, err)
		})
		logFile, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer logFile.Close()

		ctx := context.Background()
		stubbornID := strings.TrimPrefix(containerStatus(stubborn, "main").ContainerID, "containerd://")
		start := time.Now()
		a.removeManifest("polite.yaml")
		a.removeManifest("stubborn.yaml")

		polltest.Until(t, 10*time.Second, "polite pod gone", func() (bool, string) {
			return a.pod("polite") == nil && !sandboxExists(ctx, t, rt, polite.Name), "still there"
		})
		politeGone := time.Since(start)
		b, _ := io.ReadAll(logFile)
		if !strings.Contains(string(b), "got TERM") {
			t.Errorf("the polite container's log does not show SIGTERM: %q", b)
		}

		// The stubborn container must be running until the grace deadline
		// and then be killed (SIGKILL: exit code 137). The deadline starts
		// when the agent takes the manifest as deleted: file.RecreateWindow
		// after the file went. How soon after the deadline the kill lands
		// depends on the machine's load, so the upper bound only tells the
		// grace period from the pod's default 30s, which a bug taking the
		// wrong one would wait.
		var stoppedAfter time.Duration
		var exitCode int32
		polltest.Until(t, (grace+20)*time.Second, "stubborn container stopped", func() (bool, string) {
			resp, err := rt.Runtime().ContainerStatus(ctx, stubbornID, false)
			if err != nil {
				stoppedAfter, exitCode = time.Since(start), -1
				return true, ""
			}
			if st := resp.GetStatus(); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
				stoppedAfter, exitCode = time.Since(start), st.GetExitCode()
				return true, ""
			}
			return false, resp.GetStatus().GetState().String()
		})
		if stoppedAfter < grace*time.Second || stoppedAfter > (grace+15)*time.Second {
			t.Errorf("stubborn container stopped %v after the delete, want the grace deadline %ds after the window %v", stoppedAfter, grace, file.RecreateWindow)
		}
		if exitCode != -1 && exitCode != 137 {
			t.Errorf("stubborn container exited with %d, want 137 (SIGKILL at the deadline)", exitCode)
		}
		polltest.Until(t, 10*time.Second, "stubborn pod gone", func() (bool, string) {
			return a.pod("stubborn") == nil && !sandboxExists(ctx, t, rt, stubborn.Name), "still there"
		})
		t.Logf("polite pod gone after %v, stubborn container killed after %v (grace %ds)", politeGone.Round(time.Millisecond), stoppedAfter.Round(time.Millisecond), grace)

		sandboxes, containers, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxes)+len(containers) != 0 {
			t.Errorf("runtime still holds %d sandboxes and %d containers of the node", len(sandboxes), len(containers))
		}
		// The worker removes the pod's logs right after its sandbox, so
		// they may outlive the sandbox by a moment.
		for _, p := range []string{a.containerLog(polite, "main", 0), a.containerLog(stubborn, "main", 0)} {
			polltest.Until(t, 10*time.Second, "log "+p+" removed with its pod", func() (bool, string) {
				_, err := os.Stat(p)
				return os.IsNotExist(err), fmt.Sprintf("stat: %v", err)
			})
		}
	})
}

// A container that exits is noticed and shows as terminated with its exit
// code; under restartPolicy Never the pod fails.
func TestExitedContainerShowsTerminated(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("exit.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: exit
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "sleep 1; exit 3"]
`, env.busybox))
		polltest.Until(t, 30*time.Second, "container terminated with exit code 3", func() (bool, string) {
			pod := a.pod("exit")
			if pod == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(pod, "main")
			ok := cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 3 &&
				cs.State.Terminated.Reason == "Error" && pod.Status.Phase == "Failed"
			return ok, describe(pod)
		})
		// A finished pod keeps no sandbox running (its IP is freed).
		polltest.Until(t, 10*time.Second, "sandbox of the finished pod stopped", func() (bool, string) {
			sandboxes, _, err := runtimePods(context.Background(), rt, a.node)
			if err != nil || len(sandboxes) != 1 {
				return false, fmt.Sprintf("%v %v", sandboxes, err)
			}
			return sandboxes[0].State == runtimeapi.PodSandboxState_SANDBOX_NOTREADY, sandboxes[0].State.String()
		})
	})
}

// waitReplaced waits until container of the static pod name runs in a
// new instance, not the one it ran in before, and returns the pod.
func (a *agent) waitReplaced(name, container string, before *v1.Pod) *v1.Pod {
	a.t.Helper()
	old := containerStatus(before, container).ContainerID
	var after *v1.Pod
	polltest.Until(a.t, 30*time.Second, container+" restarted with the new spec", func() (bool, string) {
		after = a.pod(name)
		if after == nil {
			return false, "pod gone"
		}
		cs := containerStatus(after, container)
		return cs != nil && cs.ContainerID != old && cs.State.Running != nil, describe(after)
	})
	return after
}

func sandboxExists(ctx context.Context, t *testing.T, rt *ctrdtest.Containerd, podName string) bool {
	sandboxes, err := rt.Runtime().ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if sb.GetMetadata().GetName() == podName {
			return true
		}
	}
	return false
}
