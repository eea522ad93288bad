package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// resizePod is the static pod "resize": "inplace" needs no restart for
// either resource; "restart" asks for one when its memory changes. Both
// get cpu and memory as their requests and limits (a Guaranteed pod).
func resizePod(image, cpu, memory string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: resize
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: inplace
    image: %[1]s
    command: ["sleep", "3600"]
    resizePolicy:
    - {resourceName: cpu, restartPolicy: NotRequired}
    - {resourceName: memory, restartPolicy: NotRequired}
    resources:
      limits: {cpu: %[2]s, memory: %[3]s}
  - name: restart
    image: %[1]s
    command: ["sleep", "3600"]
    resizePolicy:
    - {resourceName: memory, restartPolicy: RestartContainer}
    resources:
      limits: {cpu: %[2]s, memory: %[3]s}
`, image, cpu, memory)
}

// Editing a static pod's resources resizes it in place: the container
// whose resizePolicy needs no restart keeps its container ID and has its
// new cpu quota and shares and memory limit in its cgroup files at once;
// the one whose policy asks for a restart when its memory changes runs
// again, with a new ID and restart count 1, in cgroups of the new size;
// the pod's cgroup takes the pod's new limits; the status shows each
// container's allocated and running resources and no resize condition.
// A restart of the agent afterwards restarts nothing: it kept what it
// granted and applied.
func TestResizeInPlace(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		skipUnlessCgroupV1(t)
		a := startAgent(t, rt)
		a.writeManifest("resize.yaml", resizePod(env.busybox, "100m", "64Mi"))
		before := a.waitRunning("resize", 60*time.Second)
		podCg := a.cgroupRoot() + "/kubepods/pod" + string(before.UID)
		inplace, restart := containerIDOf(t, before, "inplace"), containerIDOf(t, before, "restart")
		checkLimits(t, podCg, "", 20000, 0, 128<<20)
		checkLimits(t, podCg, inplace, 10000, 102, 64<<20)

		a.writeManifest("resize.yaml", resizePod(env.busybox, "250m", "96Mi"))
		after := a.waitResized("resize", "250m", "96Mi", 1)
		if got := containerIDOf(t, after, "inplace"); got != inplace {
			t.Errorf("inplace was restarted (%s -> %s); its resizePolicy needs no restart", inplace, got)
		}
		if n := containerStatus(after, "inplace").RestartCount; n != 0 {
			t.Errorf("inplace restartCount = %d, want 0", n)
		}
		newRestart := containerIDOf(t, after, "restart")
		if newRestart == restart {
			t.Errorf("restart kept its container %s; its resizePolicy asks for a restart when memory changes", restart)
		}
		checkLimits(t, podCg, "", 50000, 0, 192<<20)
		checkLimits(t, podCg, inplace, 25000, 256, 96<<20)
		checkLimits(t, podCg, newRestart, 25000, 256, 96<<20)
		want := resource.MustParse("250m")
		for _, name := range []string{"inplace", "restart"} {
			if got := containerStatus(after, name).AllocatedResources[v1.ResourceCPU]; got.Cmp(want) != 0 {
				t.Errorf("%s allocatedResources.cpu = %s, want 250m", name, got.String())
			}
		}

		// Shrinking: checked against what the containers use, the
		// containers shrink before the pod's cgroup does.
		a.writeManifest("resize.yaml", resizePod(env.busybox, "150m", "80Mi"))
		shrunk := a.waitResized("resize", "150m", "80Mi", 2)
		if got := containerIDOf(t, shrunk, "inplace"); got != inplace {
			t.Errorf("inplace was restarted when shrinking (%s -> %s)", inplace, got)
		}
		newRestart = containerIDOf(t, shrunk, "restart")
		checkLimits(t, podCg, "", 30000, 0, 160<<20)
		checkLimits(t, podCg, inplace, 15000, 153, 80<<20)
		checkLimits(t, podCg, newRestart, 15000, 153, 80<<20)

		// The agent restarts: it adopts both containers as they are.
		a.stop()
		a.restart()
		again := a.waitRunning("resize", 60*time.Second)
		for name, id := range map[string]string{"inplace": inplace, "restart": newRestart} {
			if got := containerIDOf(t, again, name); got != id {
				t.Errorf("after the agent's restart %s runs as %s, want %s still", name, got, id)
			}
		}
		_, containers, err := runtimePods(context.Background(), rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		if len(containers) != 3 { // inplace, restart and the one it last replaced
			t.Errorf("%d containers in the runtime after the agent's restart, want 3", len(containers))
		}
	})
}

// waitResized waits until the static pod name's two containers run with
// cpu and memory as their limits, "restart" at restartCount restarts, and
// no resize condition is left; it returns the pod.
func (a *agent) waitResized(name, cpu, memory string, restarts int32) *v1.Pod {
	a.t.Helper()
	var pod *v1.Pod
	polltest.Until(a.t, 30*time.Second, "resize done", func() (bool, string) {
		pod = a.pod(name)
		if pod == nil {
			return false, "not on /pods"
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false, fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message)
			}
		}
		r := containerStatus(pod, "restart")
		return allRunning(pod) && runsWith(containerStatus(pod, "inplace"), cpu, memory) && r.RestartCount == restarts && runsWith(r, cpu, memory), describe(pod)
	})
	return pod
}

// runsWith reports whether cs shows a container running with cpu and
// memory as its limits.
func runsWith(cs *v1.ContainerStatus, cpu, memory string) bool {
	if cs == nil || cs.State.Running == nil || cs.Resources == nil {
		return false
	}
	c, m := cs.Resources.Limits[v1.ResourceCPU], cs.Resources.Limits[v1.ResourceMemory]
	return c.Cmp(resource.MustParse(cpu)) == 0 && m.Cmp(resource.MustParse(memory)) == 0
}

// checkLimits compares the cgroup v1 files of container id of the pod
// cgroup podCg (the pod's own when id is ""): its CFS quota, cpu shares
// (0: not checked) and memory limit.
func checkLimits(t *testing.T, podCg, id string, quota, shares, memory int64) {
	t.Helper()
	path := podCg
	if id != "" {
		path += "/" + id
	}
	for _, c := range []struct {
		hierarchy, file string
		want            int64
	}{
		{"cpu", "cpu.cfs_quota_us", quota},
		{"cpu", "cpu.shares", shares},
		{"memory", "memory.limit_in_bytes", memory},
	} {
		if c.want == 0 {
			continue
		}
		if got := cgroupFile(t, c.hierarchy, path, c.file); got != strconv.FormatInt(c.want, 10) {
			t.Errorf("%s of %s = %s, want %d", c.file, path, got, c.want)
		}
	}
}
