package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

func stressPod(i, rev int) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: stress-%d
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: crasher
    image: %[3]s
    command: ["sh", "-c", "sleep 0.$((RANDOM %% 9 + 1)); exit %[2]d"]
  - name: steady
    image: %[3]s
    command: ["sleep", "3600"]
`, i, rev%3+1, env.busybox)
}

// invariantChecker samples the runtime's container list and records every
// time two running containers share a pod UID and a container name: the
// one thing a pod worker must never let happen.
type invariantChecker struct {
	rt      *ctrdtest.Containerd
	node    string
	mu      sync.Mutex
	samples int
	faults  []string
}

func (c *invariantChecker) check(ctx context.Context) error {
	containers, err := c.rt.Runtime().ListContainers(ctx, nil)
	if err != nil {
		return err
	}
	live := map[string][]string{}
	for _, ctr := range containers {
		// Live means running: two copies of a container's program at
		// once. A created container runs nothing, and nothing ever starts
		// one later: a worker starts only the container it has just
		// created. (containerd keeps, and refuses to delete, a created
		// container whose start an agent SIGKILL cut short; the restarted
		// agent replaces it, as the kubelet does.)
		if ctr.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if !strings.HasSuffix(ctr.Labels["io.kubernetes.pod.name"], "-"+c.node) {
			continue
		}
		key := ctr.Labels["io.kubernetes.pod.uid"] + "/" + ctr.Labels["io.kubernetes.container.name"]
		live[key] = append(live[key], ctr.Id[:12]+"("+ctr.State.String()+" in "+ctr.PodSandboxId[:12]+")")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples++
	for key, ids := range live {
		if len(ids) > 1 {
			c.faults = append(c.faults, fmt.Sprintf("%s: %v", key, ids))
		}
	}
	return nil
}

func (c *invariantChecker) run(ctx context.Context) {
	for ctx.Err() == nil {
		_ = c.check(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Under churn (20 pods whose containers crash and restart, manifests
// edited, deleted and restored, the agent SIGKILLed and restarted three
// times), no pod ever has two live containers of one name, in either PLEG
// mode. Checked on containerd 2.x, which serves container events.
func TestPLEGInvariantUnderStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		if !strings.HasPrefix(rt.Name(), "containerd-2") {
			t.Skip("evented mode needs containerd 2.x; 1.6 has no container events")
		}
		for _, mode := range []string{"relist", "evented"} {
			t.Run(mode, func(t *testing.T) { stress(t, rt, mode) })
		}
	})
}

func stress(t *testing.T, rt *ctrdtest.Containerd, mode string) {
	const pods = 20
	a := startAgentWith(t, rt, agentOptions{args: []string{"--pleg-mode", mode}})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	rev := make([]int, pods)
	present := make([]bool, pods)
	for i := range pods {
		a.writeManifest(fmt.Sprintf("stress-%d.yaml", i), stressPod(i, 0))
		present[i] = true
	}
	checker := &invariantChecker{rt: rt, node: a.node}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { checker.run(ctx); close(done) }()
	defer func() { stop(); <-done }()

	deadline := time.Now().Add(30 * time.Second)
	nextKill := time.Now().Add(7 * time.Second)
	kills := 0
	for time.Now().Before(deadline) {
		i := rng.IntN(pods)
		switch {
		case !present[i]:
			a.writeManifest(fmt.Sprintf("stress-%d.yaml", i), stressPod(i, rev[i]))
			present[i] = true
		case rng.IntN(3) == 0:
			a.removeManifest(fmt.Sprintf("stress-%d.yaml", i))
			present[i] = false
		default:
			rev[i]++
			a.writeManifest(fmt.Sprintf("stress-%d.yaml", i), stressPod(i, rev[i]))
		}
		if time.Now().After(nextKill) && kills < 3 {
			a.kill()
			kills++
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
			a.restart()
			nextKill = time.Now().Add(7 * time.Second)
		}
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	}

	// Restore every pod; all must come back with one sandbox each.
	for i := range pods {
		if _, err := os.Stat(filepath.Join(a.manifest, fmt.Sprintf("stress-%d.yaml", i))); os.IsNotExist(err) {
			a.writeManifest(fmt.Sprintf("stress-%d.yaml", i), stressPod(i, rev[i]))
		}
	}
	polltest.Until(t, 90*time.Second, "every stress pod's steady container running", func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		up := 0
		for i := range pods {
			if cs := containerStatus(&pods[i], "steady"); cs != nil && cs.State.Running != nil {
				up++
			}
		}
		return up == len(present), fmt.Sprintf("%d of %d up", up, len(present))
	})
	if err := checker.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxes, _, err := runtimePods(context.Background(), rt, a.node)
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]int{}
	for _, sb := range sandboxes {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready[sb.Metadata.Name]++
		}
	}
	for name, n := range ready {
		if n != 1 {
			t.Errorf("pod %s has %d ready sandboxes", name, n)
		}
	}
	checker.mu.Lock()
	defer checker.mu.Unlock()
	t.Logf("%s mode: %d runtime samples over the churn, %d agent kills, %d faults", mode, checker.samples, kills, len(checker.faults))
	for _, f := range checker.faults {
		t.Errorf("two live containers of one name: %s", f)
	}
}
