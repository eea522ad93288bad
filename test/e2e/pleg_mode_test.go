package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// In auto mode the agent runs evented where the runtime serves container
// events (containerd 2.x) and relists where it does not (1.6, said once in
// the log); /metrics shows the mode. With relisting slowed to 30s, a
// container killed outside the agent is still seen at once on 2.x: the
// events, not a relist, carry it.
func TestPLEGModeFollowsRuntime(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		evented := strings.HasPrefix(rt.Name(), "containerd-2")
		a := startAgentWith(t, rt, agentOptions{args: []string{"--pleg-relist-period", "30s"}})
		want := `minikubelet_pleg_mode{mode="relist"} 1`
		if evented {
			want = `minikubelet_pleg_mode{mode="evented"} 1`
		}
		polltest.Until(t, 15*time.Second, want+" on /metrics", func() (bool, string) {
			body, _, err := a.get(a.port, "/metrics")
			return err == nil && strings.Contains(body, want), fmt.Sprint(err)
		})
		if !evented {
			if n := a.countLogLines("does not serve container events"); n != 1 {
				t.Errorf("the missing event stream was logged %d times, want once", n)
			}
			return
		}

		a.writeManifest("victim.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: victim
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, env.busybox))
		pod := a.waitRunning("victim", 60*time.Second)
		id := strings.TrimPrefix(containerStatus(pod, "main").ContainerID, "containerd://")
		pid, err := rt.ContainerPID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		polltest.Until(t, 10*time.Second, "the kill seen without a relist", func() (bool, string) {
			p := a.pod("victim")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "main")
			return cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 137, describe(p)
		})
	})
}
