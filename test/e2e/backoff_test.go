package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// A container that keeps crashing is restarted at once the first time, then
// after 10s, then after 20s (CrashLoopBackOff doubling), and the status
// says CrashLoopBackOff while it waits. Restart times are the start times
// /pods reports for each container instance.
func TestCrashLoopBackOffSpacing(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out two back-offs")
	}
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("crash.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: crash
spec:
  hostNetwork: true
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo started; exit 1"]
`, env.busybox))
		// Every container the status ever shows, by ID, with its start.
		started := map[string]time.Time{}
		var sawBackOff bool
		polltest.Until(t, 60*time.Second, "three restarts", func() (bool, string) {
			p := a.pod("crash")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "main")
			if cs == nil {
				return false, describe(p)
			}
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				sawBackOff = true
			}
			for _, term := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if term != nil && term.ContainerID != "" {
					started[term.ContainerID] = term.StartedAt.Time
				}
			}
			if cs.State.Running != nil {
				started[cs.ContainerID] = cs.State.Running.StartedAt.Time
			}
			return len(started) >= 4, describe(p)
		})
		if !sawBackOff {
			t.Error("the status never said CrashLoopBackOff")
		}
		// Container GC: after three restarts the runtime holds one dead
		// instance of the container (and the one that runs or waits), as
		// the kubelet's MaxPerPodContainer=1.
		polltest.Until(t, 10*time.Second, "old instances collected", func() (bool, string) {
			_, ctrs, err := runtimePods(t.Context(), rt, a.node)
			if err != nil {
				return false, err.Error()
			}
			dead := 0
			for _, c := range ctrs {
				if c.GetMetadata().GetName() == "main" && c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
					dead++
				}
			}
			return dead <= 1, fmt.Sprintf("%d dead instances of %d containers", dead, len(ctrs))
		})
		var starts []time.Time
		for _, at := range started {
			starts = append(starts, at)
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		gaps := []time.Duration{starts[1].Sub(starts[0]), starts[2].Sub(starts[1]), starts[3].Sub(starts[2])}
		t.Logf("restart gaps: %v", gaps)
		// Lower bounds are exact (a restart can never come early); the
		// upper bounds only catch a back-off that did not apply or doubled
		// twice.
		want := []time.Duration{0, 10 * time.Second, 20 * time.Second}
		for i, g := range gaps {
			if g < want[i] || g > want[i]+5*time.Second {
				t.Errorf("restart %d came %v after the one before, want %v (within 5s)", i+1, g, want[i])
			}
		}
	})
}
