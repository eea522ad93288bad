package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// killPod is static pod i of TestFaultAgentKilledDuringChurn at revision
// rev (in its steady container's env): a steady container with a
// memory-backed emptyDir (a mount to leak) and a crasher that keeps the
// pod worker restarting it. Pod 0 is on the CNI network (a network
// namespace and an IP lease to leak); the others use the host's.
func killPod(i, rev int) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: kill-%[1]d
spec:
  hostNetwork: %[2]t
  terminationGracePeriodSeconds: 1
  volumes:
  - name: scratch
    emptyDir: {medium: Memory, sizeLimit: 1Mi}
  containers:
  - name: steady
    image: %[3]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    env:
    - name: REV
      value: "%[4]d"
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  - name: crasher
    image: %[3]s
    command: ["sh", "-c", "sleep 0.$((RANDOM %% 9 + 1)); exit 1"]
`, i, i != 0, env.busybox, rev)
}

// The agent SIGKILLed at random moments while its static pods are added,
// edited and removed (also while it is down), and started again each time:
// no container of a pod ever runs twice at once; afterwards every
// manifest's pod runs its last revision, once, on /pods and in the
// runtime; and once every manifest is gone, nothing of the node's pods is
// left: no sandbox or container, mount, pod cgroup, pod or log directory,
// network namespace or IP lease.
func TestFaultAgentKilledDuringChurn(t *testing.T) {
	scale := faults(t)
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		seed := uint64(time.Now().UnixNano())
		t.Logf("%s form: %d kills over %d pods, seed %d", scale.name, scale.kills, scale.killPods, seed)
		rng := rand.New(rand.NewPCG(seed, 10))
		rev := make([]int, scale.killPods)
		present := make([]bool, scale.killPods)
		file := func(i int) string { return fmt.Sprintf("kill-%d.yaml", i) }
		for i := range scale.killPods {
			a.writeManifest(file(i), killPod(i, 0))
			present[i] = true
		}
		checker := startInvariantChecker(t, rt, a.node)
		sandboxes := newSandboxWatcher(rt, a.node)
		sandboxes.start(t)

		// change adds, edits or removes one pod's manifest.
		change := func() {
			i := rng.IntN(scale.killPods)
			switch {
			case !present[i]:
				rev[i]++
				a.writeManifest(file(i), killPod(i, rev[i]))
				present[i] = true
			case rng.IntN(4) == 0:
				a.removeManifest(file(i))
				present[i] = false
			default:
				rev[i]++
				a.writeManifest(file(i), killPod(i, rev[i]))
			}
		}
		start := time.Now()
		for range scale.kills {
			// Churn for a random while, then kill: the kill lands at a
			// random point of whatever the agent is doing (adopting pods
			// after its last start, creating a sandbox, starting or
			// killing a container, tearing a pod down). The pauses pace
			// the load; nothing waits on them.
			until := time.Now().Add(time.Duration(200+rng.IntN(2800)) * time.Millisecond)
			for time.Now().Before(until) {
				change()
				time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
			}
			a.kill()
			if rng.IntN(2) == 0 {
				change() // while the agent is down
			}
			a.restart()
		}
		anyPresent := false
		for i := range present {
			anyPresent = anyPresent || present[i]
		}
		if !anyPresent {
			a.writeManifest(file(0), killPod(0, rev[0]))
			present[0] = true
		}
		t.Logf("%d kills in %v", scale.kills, time.Since(start).Round(time.Millisecond))

		want := map[string]string{}
		for i := range present {
			if present[i] {
				want["kill-"+strconv.Itoa(i)] = strconv.Itoa(rev[i])
			}
		}
		ctx := context.Background()
		t0 := time.Now()
		waitForLogged(t, 2*time.Minute, "every manifest's pod running its last revision, once", func() (bool, string, string) {
			ok, state := a.convergedTo(ctx, want, "steady")
			return ok, state, convergenceSummary(state)
		})
		t.Logf("converged to %d pods in %v", len(want), time.Since(t0).Round(time.Millisecond))
		checker.report(t)

		// Every manifest removed: the node is left clean.
		for i := range present {
			if present[i] {
				a.removeManifest(file(i))
			}
		}
		t0 = time.Now()
		a.waitClean(sandboxes, time.Minute)
		t.Logf("clean in %v", time.Since(t0).Round(time.Millisecond))
		a.stop()
		stuck := a.stuckPods(ctx)
		for _, l := range a.leftovers(ctx, sandboxes) {
			if _, ok := stuck[l.uid]; !ok || l.uid == "" {
				t.Errorf("left after the agent stopped: %s", l.what)
			}
		}
		t.Logf("%d sandboxes seen in all", len(sandboxes.sandboxes()))
	})
}
