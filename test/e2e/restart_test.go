package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// An agent killed with SIGKILL and started again finds its pods running
// and adopts them: no container is restarted or started twice. A pod whose
// source is slow to answer after the restart (its URL fails) is not torn
// down meanwhile, and is adopted once the source answers.
func TestRestartAdoptsPodsAndWaitsForSlowSource(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		srv := newManifestServer(t)
		srv.set(200, sleeperPod("from-url"))
		a := startAgentWith(t, rt, agentOptions{args: []string{"--manifest-url", srv.URL, "--http-check-frequency", "1s"}})
		a.writeManifest("from-file.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: from-file
spec:
  containers:
  - name: a
    image: %[1]s
    command: ["sleep", "3600"]
  - name: b
    image: %[1]s
    command: ["sleep", "3600"]
`, env.busybox))
		fileBefore := a.waitRunning("from-file", 60*time.Second)
		urlBefore := a.waitRunning("from-url", 60*time.Second)
		ctx := context.Background()
		_, containersBefore, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}

		a.kill()
		srv.set(503, "not now")
		a.restart()

		fileAfter := a.waitRunning("from-file", 30*time.Second)
		for _, name := range []string{"a", "b"} {
			before, after := containerStatus(fileBefore, name), containerStatus(fileAfter, name)
			if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
				t.Errorf("container %s: %s (restarts %d) after the restart, was %s: want it adopted", name, after.ContainerID, after.RestartCount, before.ContainerID)
			}
		}
		if fileAfter.UID != fileBefore.UID {
			t.Errorf("UID changed across the restart: %s -> %s", fileBefore.UID, fileAfter.UID)
		}

		// The URL fails: its pod is unknown to the agent for now, and must
		// be left running.
		polltest.Until(t, 10*time.Second, "the URL's failure reported", func() (bool, string) {
			for _, e := range a.manifestErrors() {
				if e["source"] == "http" && strings.Contains(e["error"], "503") {
					return true, ""
				}
			}
			return false, fmt.Sprint(a.manifestErrors())
		})
		urlID := strings.TrimPrefix(containerStatus(urlBefore, "main").ContainerID, "containerd://")
		polltest.Holds(t, 3*time.Second, "the pod of a slow source untouched while the source fails", func() (bool, string) {
			resp, err := rt.Runtime().ContainerStatus(ctx, urlID, false)
			return err == nil && resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, fmt.Sprintf("%v %v", resp.GetStatus().GetState(), err)
		})

		srv.set(200, sleeperPod("from-url"))
		urlAfter := a.waitRunning("from-url", 30*time.Second)
		if got := containerStatus(urlAfter, "main"); got.ContainerID != "containerd://"+urlID || got.RestartCount != 0 {
			t.Errorf("URL pod's container %s (restarts %d) after its source came back, want %s adopted", got.ContainerID, got.RestartCount, urlID)
		}

		// The runtime's own list: the same containers, none twice.
		_, containersAfter, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		ids := func(cs []*runtimeapi.Container) map[string]bool {
			m := map[string]bool{}
			for _, c := range cs {
				m[c.Id] = true
			}
			return m
		}
		before, after := ids(containersBefore), ids(containersAfter)
		if len(before) != len(after) {
			t.Errorf("runtime holds %d containers after the restart, %d before", len(after), len(before))
		}
		for id := range before {
			if !after[id] {
				t.Errorf("container %s gone after the restart", id)
			}
		}
	})
}

// After a SIGKILL and a restart: a pod whose manifest was deleted while the
// agent was down is terminated and removed; a pod whose manifest turned bad
// meanwhile keeps running (its last good version) and is adopted once the
// manifest is fixed; a pod in the runtime that the agent does not own (no
// node label of its own) is left alone.
func TestRestartTerminatesVanishedKeepsBadAndForeign(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("gone.yaml", sleeperPod("gone"))
		a.writeManifest("broken.yaml", sleeperPod("broken"))
		gone := a.waitRunning("gone", 60*time.Second)
		broken := a.waitRunning("broken", 60*time.Second)
		ctx := context.Background()

		// A sandbox with the kubelet's labels but no minikubelet node label:
		// another agent's, or made by hand. Named like our pods so that
		// the test's cleanup removes it.
		foreignName := "foreign-" + a.node
		sbID, err := rt.Runtime().RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: foreignName, Namespace: "default", Uid: "foreign-uid-" + a.node},
			Labels: map[string]string{
				"io.kubernetes.pod.name": foreignName, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "foreign-uid-" + a.node,
			},
			LogDirectory: t.TempDir(),
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		}, "")
		if err != nil {
			t.Fatal(err)
		}

		a.kill()
		a.removeManifest("gone.yaml")
		a.writeManifest("broken.yaml", strings.Replace(sleeperPod("broken"), "containers:", "containerz:", 1))
		a.restart()

		polltest.Until(t, 30*time.Second, "the vanished manifest's pod removed from the runtime", func() (bool, string) {
			return !sandboxExists(ctx, t, rt, gone.Name), "still there"
		})
		brokenID := strings.TrimPrefix(containerStatus(broken, "main").ContainerID, "containerd://")
		// Housekeeping has run several times by now (every 2s).
		time.Sleep(3 * time.Second)
		resp, err := rt.Runtime().ContainerStatus(ctx, brokenID, false)
		if err != nil || resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("the pod of a manifest that turned bad while the agent was down was touched: %v %v", resp.GetStatus().GetState(), err)
		}
		sb, err := rt.Runtime().PodSandboxStatus(ctx, sbID, false)
		if err != nil || sb.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("a sandbox the agent does not own was touched: %v %v", sb.GetStatus().GetState(), err)
		}

		a.writeManifest("broken.yaml", sleeperPod("broken"))
		fixed := a.waitRunning("broken", 30*time.Second)
		if got := containerStatus(fixed, "main"); got.ContainerID != "containerd://"+brokenID || got.RestartCount != 0 {
			t.Errorf("fixed pod's container %s (restarts %d), want %s adopted", got.ContainerID, got.RestartCount, brokenID)
		}
	})
}

// A container whose spec changed while the agent was down is restarted
// when the agent comes back; the pod's other container is adopted as is.
func TestRestartAppliesEditMadeWhileDown(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("edit.yaml", editPod(env.busybox, "echo one; exec sleep 3600"))
		before := a.waitRunning("edit", 60*time.Second)
		a.kill()
		a.writeManifest("edit.yaml", editPod(env.busybox, "echo two; exec sleep 3600"))
		a.restart()
		oldB := containerStatus(before, "b").ContainerID
		var after = before
		polltest.Until(t, 30*time.Second, "b restarted with the spec edited while the agent was down", func() (bool, string) {
			after = a.pod("edit")
			if after == nil {
				return false, "not on /pods"
			}
			b := containerStatus(after, "b") // nil until the restarted agent's first sync
			return b != nil && b.ContainerID != oldB && b.State.Running != nil, describe(after)
		})
		if got, want := containerStatus(after, "a").ContainerID, containerStatus(before, "a").ContainerID; got != want {
			t.Errorf("container a restarted (%s -> %s) though only b changed", want, got)
		}
		if n := containerStatus(after, "b").RestartCount; n != 1 {
			t.Errorf("b restartCount = %d, want 1", n)
		}
	})
}
