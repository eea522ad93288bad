package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// deadlinePod is the pod "deadline", whose container ignores SIGTERM,
// with spec.activeDeadlineSeconds set to deadline ("" for none).
func deadlinePod(image, deadline string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: deadline
spec:
  %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
`, deadline, image)
}

// A deadline set on a running pod (as the conformance test "should allow
// activeDeadlineSeconds to be updated" does through the API) ends it as the
// kubelet does: phase Failed, reason DeadlineExceeded, its container killed
// (it ignores SIGTERM, so SIGKILL at the grace deadline), never started
// again, though the pod stays on the node. A pod beside it keeps running.
func TestActiveDeadlineEndsPod(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("deadline.yaml", deadlinePod(env.busybox, ""))
		a.writeManifest("no-deadline.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: no-deadline
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, env.busybox))
		before := a.waitRunning("deadline", 60*time.Second)
		a.waitRunning("no-deadline", 60*time.Second)
		// Started more than 2 s ago: the new deadline is past already.
		time.Sleep(time.Until(before.Status.StartTime.Add(2 * time.Second)))
		a.writeManifest("deadline.yaml", deadlinePod(env.busybox, "activeDeadlineSeconds: 2"))
		polltest.Until(t, 60*time.Second, "deadline pod Failed with DeadlineExceeded and its container ended", func() (bool, string) {
			p := a.pod("deadline")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "main")
			return p.Status.Phase == "Failed" && p.Status.Reason == "DeadlineExceeded" && cs.State.Terminated != nil, describe(p)
		})
		p := a.pod("deadline")
		if p.Status.Message == "" {
			t.Error("no message with reason DeadlineExceeded")
		}
		if p.UID != before.UID {
			t.Errorf("UID changed from %s to %s: the deadline edit made a new pod", before.UID, p.UID)
		}
		cs := containerStatus(p, "main")
		if cs.State.Terminated.ExitCode != 137 || cs.ContainerID != containerStatus(before, "main").ContainerID {
			t.Errorf("container of the pod past its deadline: %+v (%s), want the first container, killed by SIGKILL (137) at the grace deadline", cs.State.Terminated, cs.ContainerID)
		}
		// Not started again: a few sync periods and PLEG relists later it
		// is still ended, never restarted.
		time.Sleep(3 * time.Second)
		p = a.pod("deadline")
		if cs := containerStatus(p, "main"); p.Status.Phase != "Failed" || cs.State.Running != nil || cs.RestartCount != 0 {
			t.Errorf("after the deadline: %s", describe(p))
		}
		if q := a.pod("no-deadline"); q == nil || q.Status.Phase != "Running" {
			t.Errorf("the pod without a deadline: %s", describe(q))
		}
	})
}
