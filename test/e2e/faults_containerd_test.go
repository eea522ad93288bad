package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// startPrivateRuntime starts a containerd of the bed's runtime called name
// for the test alone (a test that restarts it must not disturb the others),
// and stops it when the test ends, after the test's agents (cleanups run
// last first).
func startPrivateRuntime(t *testing.T, name string) *ctrdtest.Containerd {
	t.Helper()
	rt, err := env.bed.Runtime(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rt, Bed: env.bed, BaseDir: env.base})
	if err != nil {
		t.Fatalf("start a private %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop the private %s: %v", name, err)
		}
	})
	return c
}

// twoContainerPod is a host-network pod with two long-running containers.
func twoContainerPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  containers:
  - name: a
    image: %[2]s
    command: ["sleep", "3600"]
  - name: b
    image: %[2]s
    command: ["sleep", "3600"]
`, name, env.busybox)
}

// cniPod is a pod on the CNI network with one long-running container.
func cniPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, name, env.busybox)
}

// containerRecord is what must not change about a running container.
type containerRecord struct {
	id       string
	restarts int32
}

// podContainers maps "pod/container" to the container's ID and restart
// count on /pods.
func (a *agent) podContainers(names ...string) map[string]containerRecord {
	a.t.Helper()
	out := map[string]containerRecord{}
	for _, n := range names {
		p := a.pod(n)
		if p == nil {
			a.t.Fatalf("%s is not on /pods", n)
		}
		for _, cs := range p.Status.ContainerStatuses {
			out[n+"/"+cs.Name] = containerRecord{cs.ContainerID, cs.RestartCount}
		}
	}
	return out
}

// runningIDs lists the IDs of the running containers of the agent's
// static pods called names, as the runtime reports them.
func (a *agent) runningIDs(ctx context.Context, names ...string) []string {
	a.t.Helper()
	_, containers, err := runtimePods(ctx, a.rt, a.node)
	if err != nil {
		a.t.Fatal(err)
	}
	var ids []string
	for _, c := range containers {
		for _, n := range names {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING && c.Labels["io.kubernetes.pod.name"] == a.podName(n) {
				ids = append(ids, c.Id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// logStreamFellBack is what the agent logs when its container event stream
// failed so often that it relists instead, retrying the stream every
// minute.
const logStreamFellBack = "Container event stream failed repeatedly"

// containerd restarted under the agent (SIGTERM to the daemon alone, then
// started again on the same root, state and socket, as `systemctl restart
// containerd` does): the shims keep the containers running meanwhile, and
// containerd reloads them when it starts. The agent stays up while the
// runtime is gone, reconnects, its PLEG relists again (the
// minikubelet_pleg_last_seen_seconds metric advances past the restart, and
// on containerd 2.x the event stream comes back), /healthz is ok, no
// running container is restarted (same IDs, same restart counts, on /pods
// and in the runtime), and pods added while containerd is down and after
// it is back run. The full form restarts it three times and keeps it down
// for 12s more the last time, long enough for the event stream to fall
// back to relisting. Each bed
// runtime runs in a private containerd, so that the restarts disturb no
// other test.
func TestFaultContainerdRestart(t *testing.T) {
	scale := faults(t)
	forEachRuntime(t, func(t *testing.T, shared *ctrdtest.Containerd) {
		rt := startPrivateRuntime(t, shared.Name())
		a := startAgent(t, rt)
		evented := strings.HasPrefix(rt.Name(), "containerd-2")
		a.writeManifest("pair.yaml", twoContainerPod("pair"))
		a.writeManifest("net.yaml", cniPod("net"))
		a.waitRunning("pair", time.Minute)
		a.waitRunning("net", time.Minute)
		if evented {
			polltest.Until(t, 30*time.Second, "the PLEG in evented mode", func() (bool, string) {
				v, ok := a.metric("minikubelet_pleg_mode", `{mode="evented"}`)
				return ok && v == 1, fmt.Sprintf("evented=%v (%v)", v, ok)
			})
		}
		ctx := context.Background()
		before := a.podContainers("pair", "net")
		idsBefore := a.runningIDs(ctx, "pair", "net")
		if len(idsBefore) != 3 {
			t.Fatalf("running containers before: %v, want 3", idsBefore)
		}

		for i := range scale.restarts {
			relistFailures := a.countLogLines("Relist failed")
			fallbacks := a.countLogLines(logStreamFellBack)
			t0 := time.Now()
			if err := rt.StopDaemon(ctx); err != nil {
				t.Fatal(err)
			}
			// Down until the agent has noticed: a relist failed.
			polltest.Until(t, 30*time.Second, "the agent to notice containerd is gone", func() (bool, string) {
				return a.countLogLines("Relist failed") > relistFailures, "no failed relist yet"
			})
			if !a.alive() {
				t.Fatal("the agent exited while containerd was down")
			}
			if _, err := a.pods(); err != nil {
				t.Errorf("/pods while containerd is down: %v", err)
			}
			if i == scale.restarts-1 {
				// A pod added while the runtime is gone runs once it is
				// back. In the full form containerd stays down long enough
				// for the event stream to give up and fall back to
				// relisting.
				a.writeManifest("during.yaml", sleeperPod("during"))
				for end := time.Now().Add(scale.longDown); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
					if !a.alive() {
						t.Fatal("the agent exited while containerd was down")
					}
				}
			}
			if err := rt.StartDaemon(ctx); err != nil {
				t.Fatal(err)
			}
			up := time.Now()
			polltest.Until(t, time.Minute, "/healthz ok and the PLEG relisting after the restart", func() (bool, string) {
				body, code, err := a.get(a.healthz, "/healthz")
				seen, ok := a.metric("minikubelet_pleg_last_seen_seconds", "")
				return err == nil && code == 200 && ok && seen > float64(up.UnixNano())/1e9,
					fmt.Sprintf("healthz %d %q %v; pleg last seen %v (restart at %v)", code, body, err, seen, float64(up.UnixNano())/1e9)
			})
			relisting := time.Since(up)
			if evented {
				// After a short outage the stream reconnects within its
				// backoff; after a long one (its fifth failure comes about
				// 4s after the break, sooner or later with the machine's
				// load) it has fallen back to relisting and retries every
				// minute. The agent's log says which.
				wait := 30 * time.Second
				if a.countLogLines(logStreamFellBack) > fallbacks {
					wait = 90 * time.Second
				}
				polltest.Until(t, wait, "the container event stream back", func() (bool, string) {
					v, ok := a.metric("minikubelet_pleg_mode", `{mode="evented"}`)
					return ok && v == 1, fmt.Sprintf("evented=%v (%v)", v, ok)
				})
			}
			mode := "relist"
			if v, _ := a.metric("minikubelet_pleg_mode", `{mode="evented"}`); v == 1 {
				mode = "evented"
			}
			t.Logf("restart %d: containerd down %v, the agent relisting again %v after it was back, PLEG mode %s %v after", i+1, up.Sub(t0).Round(time.Millisecond), relisting.Round(time.Millisecond), mode, time.Since(up).Round(time.Millisecond))
		}
		a.waitRunning("during", time.Minute)

		// Nothing changes, for a few relist periods and pod syncs.
		polltest.Holds(t, 3*time.Second, "the containers of before the restart running on", func() (bool, string) {
			after := a.podContainers("pair", "net")
			idsAfter := a.runningIDs(ctx, "pair", "net")
			return maps.Equal(before, after) && slices.Equal(idsBefore, idsAfter),
				fmt.Sprintf("on /pods %v, was %v; running in the runtime %v, was %v", after, before, idsAfter, idsBefore)
		})

		// A pod added after the restart runs.
		a.writeManifest("late.yaml", sleeperPod("late"))
		a.waitRunning("late", time.Minute)
	})
}
