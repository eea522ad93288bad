package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/agent/sources/file"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// A manifest deleted and created again at once, with one container
// changed (what `git checkout web.yaml` or `rm f && cp g f` does), is an
// edit: the pod keeps its UID, sandbox and IP; the unchanged container
// keeps running, with its restart count and its log; the changed one is
// restarted. A real delete then terminates the pod; the test logs how long
// that took (the file source's window plus the termination).
func TestDeleteThenCreateIsAnEdit(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		const bOne = "trap 'exit 0' TERM; echo one; while true; do sleep 1 & wait; done"
		const bTwo = "trap 'exit 0' TERM; echo two; while true; do sleep 1 & wait; done"
		path := filepath.Join(a.manifest, "edit.yaml")
		if err := os.WriteFile(path, []byte(editPod(env.busybox, bOne)), 0o644); err != nil {
			t.Fatal(err)
		}
		before := a.waitRunning("edit", 60*time.Second)
		if before.Status.PodIP == "" {
			t.Fatalf("pod has no IP: %s", describe(before))
		}
		aLog := a.containerLog(before, "a", 0)
		polltest.Until(t, 10*time.Second, "a's first log line", func() (bool, string) {
			b, err := os.ReadFile(aLog)
			return err == nil && strings.Contains(string(b), "a-started"), fmt.Sprintf("%q %v", b, err)
		})
		ctx := context.Background()
		sandboxesBefore, _, err := runtimePods(ctx, rt, a.node)
		if err != nil || len(sandboxesBefore) != 1 {
			t.Fatalf("sandboxes before: %v %v", sandboxesBefore, err)
		}

		// Delete, then create: no rename, two separate file system events.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(editPod(env.busybox, bTwo)), 0o644); err != nil {
			t.Fatal(err)
		}
		after := a.waitReplaced("edit", "b", before)

		if after.UID != before.UID {
			t.Errorf("UID changed from %s to %s: the re-created manifest made a new pod", before.UID, after.UID)
		}
		if after.Status.PodIP != before.Status.PodIP {
			t.Errorf("pod IP changed from %s to %s", before.Status.PodIP, after.Status.PodIP)
		}
		sandboxesAfter, _, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxesAfter) != 1 || sandboxesAfter[0].Id != sandboxesBefore[0].Id {
			t.Errorf("sandbox replaced: before %s, after %v", sandboxesBefore[0].Id, sandboxesAfter)
		}
		aBefore, aAfter := containerStatus(before, "a"), containerStatus(after, "a")
		if aAfter.ContainerID != aBefore.ContainerID || aAfter.RestartCount != 0 || aAfter.State.Running == nil {
			t.Errorf("unchanged container a was touched: %s (restarts %d) -> %s (restarts %d), %s",
				aBefore.ContainerID, aBefore.RestartCount, aAfter.ContainerID, aAfter.RestartCount, describe(after))
		}
		if n := containerStatus(after, "b").RestartCount; n != 1 {
			t.Errorf("b restartCount = %d, want 1", n)
		}
		if b, err := os.ReadFile(aLog); err != nil || !strings.Contains(string(b), "a-started") {
			t.Errorf("a's log lost its first line: %q %v", b, err)
		}
		polltest.Until(t, 10*time.Second, "b's new log", func() (bool, string) {
			b, err := os.ReadFile(a.containerLog(after, "b", 1))
			return err == nil && strings.Contains(string(b), "two"), fmt.Sprintf("%q %v", b, err)
		})
		if b, err := os.ReadFile(a.containerLog(after, "b", 0)); err != nil || !strings.Contains(string(b), "one") {
			t.Errorf("b's previous log is gone: %q %v", b, err)
		}

		// A real delete: the pod goes once the window has passed and its
		// containers have stopped (they exit on SIGTERM).
		start := time.Now()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		var offPods time.Duration
		polltest.Until(t, 30*time.Second, "pod terminated and removed", func() (bool, string) {
			if offPods == 0 && a.pod("edit") == nil {
				offPods = time.Since(start)
			}
			return offPods != 0 && !sandboxExists(ctx, t, rt, after.Name), "still there"
		})
		t.Logf("real delete: pod off /pods after %v, sandbox removed after %v (window %v)",
			offPods.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), file.RecreateWindow)
	})
}
