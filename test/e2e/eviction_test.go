package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/machine"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The memory tests give pods podsMemory: --system-reserved takes the rest
// of the host's memory, so that the pods cgroup's limit is podsMemory and
// allocatableMemory.available is what the test's own pods leave of it,
// whatever the rest of the shared host does (memory.available, the host's,
// moves with other tests). memory.available's threshold, which
// allocatableMemory.available's copies, is set at evictionThreshold, and
// the pod allocates hogMiB: it crosses the threshold at about 700MiB and
// would meet the kernel's OOM killer at 1GiB if it were not evicted.
const (
	podsMemory        = 1 << 30
	evictionThreshold = "300Mi"
	hogMiB            = 1536
)

// memoryEvictionArgs are the agent flags of the memory tests.
func memoryEvictionArgs(t *testing.T) []string {
	t.Helper()
	capacity := machine.MemoryCapacity()
	if capacity < 4*podsMemory {
		t.Skipf("the host has %d MiB of memory; the test needs 4GiB", capacity>>20)
	}
	return []string{"--system-reserved", fmt.Sprintf("memory=%d", capacity-podsMemory), "--eviction-hard", "memory.available<" + evictionThreshold}
}

// evictionPod is the manifest of a pod of the eviction tests: name, bound
// to nodeName when set (an API pod), with grace seconds of
// terminationGracePeriodSeconds and one container of the test image
// named container; more is the rest of the container and of the spec,
// indented as the container's fields.
func evictionPod(name, nodeName string, grace int, container, more string) string {
	bind := ""
	if nodeName != "" {
		bind = "\n  nodeName: " + nodeName
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:%s
  terminationGracePeriodSeconds: %d
  containers:
  - name: %s
    image: %s
    imagePullPolicy: Never
%s`, name, bind, grace, container, env.busybox, more)
}

// hogPod is a BestEffort pod that, while the file hog exists in the host
// directory flags, allocates hogMiB in 1MiB strings as fast as it can and
// holds them; without the file it only sleeps.
func hogPod(name, nodeName, flags string) string {
	return evictionPod(name, nodeName, 30, "hog", fmt.Sprintf(`    command: ["sh", "-c", "if [ -e /flags/hog ]; then exec awk 'BEGIN { for (i = 0; i < %d; i++) a[i] = sprintf(\"%%1048576s\", \"\"); system(\"sleep 3600\") }'; fi; exec sleep 3600"]
    volumeMounts:
    - {name: flags, mountPath: /flags}
  volumes:
  - name: flags
    hostPath: {path: %s}
`, hogMiB, flags))
}

// guaranteedPod is a Guaranteed pod that sleeps.
func guaranteedPod(name, nodeName string) string {
	return evictionPod(name, nodeName, 1, "main", `    command: ["sleep", "3600"]
    resources:
      limits: {cpu: 50m, memory: 32Mi}
`)
}

// onOneRuntime runs f against one containerd of the bed: for what the
// runtime's version does not change (cgroups, the agent's own logic),
// to keep the suite short.
func onOneRuntime(t *testing.T, f func(t *testing.T, rt *ctrdtest.Containerd)) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	rt := env.runtimes[len(env.runtimes)-1]
	t.Run(rt.Name(), func(t *testing.T) { f(t, rt) })
}

// hogFlags makes the host directory of hogPod's flag, with the flag set.
func hogFlags(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hog"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// evictedStatus checks an evicted pod's status as the kubelet leaves it:
// phase Failed, reason Evicted, the message naming the resource and the
// container's usage, the DisruptionTarget condition, its container killed
// by the agent, not by the kernel's OOM killer.
func evictedStatus(p *v1.Pod, resource, container string) error {
	var errs []string
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Evicted" {
		errs = append(errs, fmt.Sprintf("phase %s reason %q, want Failed Evicted", p.Status.Phase, p.Status.Reason))
	}
	for _, w := range []string{"The node was low on resource: " + resource + ". Threshold quantity: ", ", available: ", "Container " + container + " was using "} {
		if !strings.Contains(p.Status.Message, w) {
			errs = append(errs, fmt.Sprintf("message %q lacks %q", p.Status.Message, w))
		}
	}
	disrupted := false
	for _, c := range p.Status.Conditions {
		disrupted = disrupted || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet)
	}
	if !disrupted {
		errs = append(errs, fmt.Sprintf("no DisruptionTarget condition in %+v", p.Status.Conditions))
	}
	if cs := containerStatus(p, container); cs != nil && cs.State.Terminated != nil && cs.State.Terminated.Reason == "OOMKilled" {
		errs = append(errs, "its container was killed by the OOM killer")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// A BestEffort static pod allocating memory past the pods' allocatable
// memory threshold is evicted before the kernel's OOM killer acts, while
// a Guaranteed static pod beside it keeps running untouched; the evicted
// pod shows the kubelet's status and message and is counted; once the
// pressure has cleared for the transition period, it runs again (it is a
// static pod).
func TestEvictionMemory(t *testing.T) {
	// Beside the other eviction tests (each has its own pods cgroup,
	// filesystem or pid limit), at the end of the suite.
	t.Parallel()
	onOneRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		flags := hogFlags(t)
		a := startAgent(t, rt, append(memoryEvictionArgs(t), "--eviction-pressure-transition-period", "3s", "--eviction-monitoring-period", "1s")...)
		a.writeManifest("guaranteed.yaml", guaranteedPod("guaranteed", ""))
		before := containerStatus(a.waitRunning("guaranteed", time.Minute), "main")

		start := time.Now()
		a.writeManifest("hog.yaml", hogPod("hog", "", flags))
		var hog *v1.Pod
		polltest.Until(t, time.Minute, "the hog evicted", func() (bool, string) {
			hog = a.pod("hog")
			if hog == nil {
				return false, "not on /pods"
			}
			return hog.Status.Phase == v1.PodFailed, describe(hog)
		})
		t.Logf("hog evicted %v after its manifest was written: %s", time.Since(start).Round(time.Millisecond), hog.Status.Message)
		if err := evictedStatus(hog, "memory", "hog"); err != nil {
			t.Error(err)
		}
		polltest.Holds(t, 3*time.Second, "the Guaranteed pod untouched", func() (bool, string) {
			g := a.pod("guaranteed")
			cs := containerStatus(g, "main")
			return g != nil && g.Status.Phase == v1.PodRunning && cs != nil && cs.State.Running != nil && cs.ContainerID == before.ContainerID && cs.RestartCount == 0, describe(g)
		})
		if v, ok := a.metric("kubelet_evictions", `{eviction_signal="allocatableMemory.available"}`); !ok || v != 1 {
			t.Errorf(`kubelet_evictions{eviction_signal="allocatableMemory.available"} = %v (%v), want 1`, v, ok)
		}
		if !a.logContains("Memory notification: measuring at once") {
			t.Error("no memory notification woke the eviction manager")
		}

		// The pressure clears (the hog's memory is gone): the static pod
		// runs again, sleeping this time.
		if err := os.Remove(filepath.Join(flags, "hog")); err != nil {
			t.Fatal(err)
		}
		polltest.Until(t, time.Minute, "the evicted static pod running again", func() (bool, string) {
			p := a.pod("hog")
			return p != nil && p.Status.Phase == v1.PodRunning && allRunning(p), describe(p)
		})
		if !a.logContains("Starting an evicted static pod again") {
			t.Error("the log does not say the evicted static pod was started again")
		}
	})
}

// In node mode an API pod evicted for memory shows phase Failed, reason
// Evicted and the kubelet's message in the API, with an Evicted event,
// while the Guaranteed pod beside it runs on; the Node's MemoryPressure
// condition turns True, and False again after the transition period; the
// Node's allocatable memory is the pods' share less the threshold. One
// runtime: what is tested here is the API's view.
func TestEvictionAPIPod(t *testing.T) {
	// Beside the other eviction tests (each has its own pods cgroup,
	// filesystem or pid limit), at the end of the suite.
	t.Parallel()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	flags := hogFlags(t)
	n := startNodeAgent(t, env.runtimes[0], nil, append(memoryEvictionArgs(t), "--node-status-update-frequency", "1s", "--eviction-pressure-transition-period", "5s", "--eviction-monitoring-period", "1s")...)
	node := n.waitNodeReady(time.Minute)
	if got, want := node.Status.Allocatable.Memory().Value(), int64(podsMemory-300<<20); got != want {
		t.Errorf("the Node's allocatable memory %d, want the pods' %d less the 300Mi threshold: %d", got, int64(podsMemory), want)
	}
	n.kubectl(guaranteedPod("guaranteed", n.a.node), "apply", "-f", "-")
	n.waitAPIPod("guaranteed", time.Minute, "guaranteed running", runningWithIP)

	n.kubectl(hogPod("hog", n.a.node, flags), "apply", "-f", "-")
	hog := n.waitAPIPod("hog", 2*time.Minute, "the hog Failed in the API", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if err := evictedStatus(hog, "memory", "hog"); err != nil {
		t.Error(err)
	}
	polltest.Until(t, 30*time.Second, "an Evicted event for the hog", func() (bool, string) {
		out := n.kubectl("", "get", "events", "--field-selector", "involvedObject.name=hog,reason=Evicted", "-o", "name")
		return strings.TrimSpace(out) != "", out
	})
	if g := n.waitAPIPod("guaranteed", 10*time.Second, "guaranteed still running", runningWithIP); containerStatus(g, "main").RestartCount != 0 {
		t.Errorf("the Guaranteed pod restarted: %s", describe(g))
	}
	pressure := func() string {
		return n.kubectl("", "get", "node", n.a.node, "-o", `jsonpath={.status.conditions[?(@.type=="MemoryPressure")].status}`)
	}
	polltest.Until(t, 30*time.Second, "MemoryPressure True on the Node", func() (bool, string) {
		s := pressure()
		return s == "True", s
	})
	polltest.Until(t, time.Minute, "MemoryPressure False again after the transition period", func() (bool, string) {
		s := pressure()
		return s == "False", s
	})
	// An API pod evicted is not started again: the API's controllers
	// make a new one if they want.
	if p := n.waitAPIPod("hog", 10*time.Second, "the hog still there", func(*v1.Pod) bool { return true }); p.Status.Phase != v1.PodFailed {
		t.Errorf("the evicted API pod: %s", describe(p))
	}
}

// ephemeralPods are a pod writing past its ephemeral-storage limit (to
// its writable layer), one writing past its emptyDir's sizeLimit, and one
// well within its limit.
func ephemeralPods() map[string]string {
	pod := func(name, limit, target string, mib int, volume string) string {
		return evictionPod(name, "", 1, "writer", fmt.Sprintf(`    command: ["sh", "-c", "dd if=/dev/zero of=%s bs=1M count=%d; exec sleep 3600"]
    resources:
      limits: {ephemeral-storage: %s}%s
`, target, mib, limit, volume))
	}
	scratch := `
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 4Mi}`
	return map[string]string{
		"layer":    pod("layer", "8Mi", "/big", 16, ""),
		"emptydir": pod("emptydir", "1Gi", "/scratch/big", 8, scratch),
		"calm":     pod("calm", "64Mi", "/small", 1, ""),
	}
}

// A pod writing past its ephemeral-storage limit and one writing past its
// emptyDir's sizeLimit are evicted with the kubelet's messages, with no
// grace; a pod within its limit runs on.
func TestEvictionLocalStorage(t *testing.T) {
	// Beside the other eviction tests (each has its own pods cgroup,
	// filesystem or pid limit), at the end of the suite.
	t.Parallel()
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt, "--eviction-monitoring-period", "1s")
		for name, content := range ephemeralPods() {
			a.writeManifest(name+".yaml", content)
		}
		want := map[string]string{
			// One container: the pod's total (its writable layer and log)
			// is over the sum of its containers' limits first.
			"layer":    "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. ",
			"emptydir": `Usage of EmptyDir volume "scratch" exceeds the limit "4Mi". `,
		}
		// Both are watched at once, and each manifest removed as soon as
		// its pod shows evicted: evicted for its own limit, a static pod
		// runs again after a back-off of 10s, about the time containerd
		// takes to refresh a writable layer's usage, so that waiting for
		// one pod at a time would see the other evicted twice.
		polltest.Until(t, time.Minute, "both evicted", func() (bool, string) {
			var state []string
			for name, msg := range want {
				p := a.pod(name)
				switch {
				case p == nil:
					state = append(state, name+" not on /pods")
				case p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" && p.Status.Message == msg:
					a.removeManifest(name + ".yaml")
					delete(want, name)
				default:
					state = append(state, name+": "+describe(p)+" "+p.Status.Message)
				}
			}
			return len(want) == 0, strings.Join(state, "; ")
		})
		// The pod within its limit runs, its first container still.
		calm := a.waitRunning("calm", time.Minute)
		if c := containerStatus(calm, "writer"); c == nil || c.RestartCount != 0 || calm.Status.Reason != "" {
			t.Errorf("the pod within its limit: %s %s, container %+v", describe(calm), calm.Status.Reason, c)
		}
		for _, signal := range []string{"ephemeralpodfs.limit", "emptydirfs.limit"} {
			if v, ok := a.metric("kubelet_evictions", `{eviction_signal="`+signal+`"}`); !ok || v != 1 {
				t.Errorf("kubelet_evictions{eviction_signal=%q} = %v (%v), want 1", signal, v, ok)
			}
		}
	})
}

// forkBomb is a pod that forks without end: each process forks two and
// waits for them; a shell that cannot fork exits, and the tree is grown
// again, so that it keeps hitting whatever pid limit it has (within a
// fifth of a core).
func forkBomb(name string) string {
	return evictionPod(name, "", 0, "bomb", `    command: ["sh", "-c", "(f() { f & f & wait; }; while true; do f; done) 2>/dev/null & exec sleep 3600"]
    resources:
      limits: {cpu: 200m}
`)
}

// A fork bomb in a pod stays within the pod's pid limit (--pod-max-pids):
// the agent stays healthy and keeps serving, the pod beside it runs on,
// and removing the bomb's manifest removes all of it.
func TestEvictionForkBomb(t *testing.T) {
	// Beside the other eviction tests (each has its own pods cgroup,
	// filesystem or pid limit), at the end of the suite.
	t.Parallel()
	onOneRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		const maxPids = 32
		a := startAgent(t, rt, "--pod-max-pids", strconv.Itoa(maxPids))
		a.writeManifest("calm.yaml", guaranteedPod("calm", ""))
		calm := containerStatus(a.waitRunning("calm", time.Minute), "main").ContainerID
		a.writeManifest("bomb.yaml", forkBomb("bomb"))
		bomb := a.waitRunning("bomb", time.Minute)
		// bomb is Burstable (a cpu limit, no memory).
		pids := filepath.Join("/sys/fs/cgroup/pids", a.cgroupRoot(), "kubepods/burstable/pod"+string(bomb.UID))
		// A fork refused counts in pids.events of the cgroup of the task
		// that forked (the container's, below the pod's).
		refused := func() int {
			n := 0
			_ = filepath.WalkDir(pids, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Name() == "pids.events" {
					b, _ := os.ReadFile(p)
					var c int
					if _, err := fmt.Sscanf(string(b), "max %d", &c); err == nil {
						n += c
					}
				}
				return nil
			})
			return n
		}
		polltest.Until(t, 30*time.Second, "the bomb at its pid limit", func() (bool, string) {
			cur, _ := os.ReadFile(filepath.Join(pids, "pids.current"))
			return refused() > 0, fmt.Sprintf("%d forks refused, %s tasks", refused(), strings.TrimSpace(string(cur)))
		})
		polltest.Holds(t, 3*time.Second, "the agent healthy, the bomb within its limit, the other pod running", func() (bool, string) {
			cur, err1 := os.ReadFile(filepath.Join(pids, "pids.current"))
			limit, err2 := os.ReadFile(filepath.Join(pids, "pids.max"))
			n, _ := strconv.Atoi(strings.TrimSpace(string(cur)))
			_, code, err := a.get(a.healthz, "/healthz")
			c := containerStatus(a.pod("calm"), "main")
			ok := err1 == nil && err2 == nil && strings.TrimSpace(string(limit)) == strconv.Itoa(maxPids) && n <= maxPids &&
				err == nil && code == 200 && a.alive() && c != nil && c.State.Running != nil && c.ContainerID == calm
			return ok, fmt.Sprintf("pids %d of %s, healthz %d %v, calm %+v", n, strings.TrimSpace(string(limit)), code, err, c)
		})
		a.removeManifest("bomb.yaml")
		polltest.Until(t, time.Minute, "the bomb gone", func() (bool, string) {
			_, err := os.Stat(pids)
			return os.IsNotExist(err) && a.pod("bomb") == nil, fmt.Sprint(err)
		})
	})
}
