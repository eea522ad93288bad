package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// diskPod is a pod whose start needs the root dir and the pod logs dir: an
// emptyDir volume, a termination message file (the default
// terminationMessagePath) and its log. Its container logs a line every
// 200ms, so that its log keeps being written.
func diskPod(name string, volume bool) string {
	vol, mount := "", ""
	if volume {
		vol = "\n  volumes:\n  - name: scratch\n    emptyDir: {}"
		mount = "\n    volumeMounts:\n    - {name: scratch, mountPath: /scratch}"
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0%s
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "while true; do echo tick; sleep 0.2; done"]%s
`, name, vol, env.busybox, mount)
}

// fillDisk fills the filesystem at dir: one file takes every block left,
// then empty files take every inode left (a real disk's directories and
// files need blocks; tmpfs's need only inodes). It returns the directory
// holding the filler, whose removal frees the space again.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	if err := os.Mkdir(filler, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(filler, "blocks"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(filler, fmt.Sprintf("inode-%d", i)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
		f.Close()
	}
	return filler
}

// stagedPod is diskPod with an init container that runs for a few
// seconds first: its sandbox and directories exist before the disk fills
// up, and its main container is created after.
func stagedPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  initContainers:
  - name: wait
    image: %[2]s
    command: ["sleep", "4"]
  containers:
  - name: main
    image: %[2]s
    command: ["sh", "-c", "while true; do echo tick; sleep 0.2; done"]
`, name, env.busybox)
}

// mountSmallDisk mounts a tmpfs of 16MiB and 4096 inodes at dir. The
// agent's cleanup unmounts what is under its dir, this too; the cleanup
// registered here runs after it, should that fail.
func mountSmallDisk(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m,nr_inodes=4096,mode=0755"); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("cleanup: unmount %s: %v", dir, err)
		}
	})
}

// waitNoSpace waits until container ctr of the static pod name waits with
// a message naming a full disk below dir, and returns the waiting state.
func (a *agent) waitNoSpace(name, ctr, dir string) string {
	a.t.Helper()
	var state string
	polltest.Until(a.t, time.Minute, name+"'s "+ctr+" waiting, saying the disk is full", func() (bool, string) {
		p := a.pod(name)
		if p == nil {
			return false, "not on /pods"
		}
		cs := containerStatus(p, ctr)
		if cs == nil || cs.State.Waiting == nil {
			return false, describe(p)
		}
		state = cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
		return strings.Contains(cs.State.Waiting.Message, "no space left on device") && strings.Contains(cs.State.Waiting.Message, dir), describe(p)
	})
	return state
}

// The agent's --root-dir and --pod-logs-dir each on a small filesystem (a
// tmpfs of 16MiB and 4096 inodes), which fill up (blocks, then inodes):
// first the root dir's, then, once it is freed, the logs dir's. Pods that
// need the full one to start wait, and /pods says why, naming the cause
// ("no space left on device"): a pod's emptyDir volume, its pod directory,
// the termination message file of a container created after the disk
// filled (its pod's init container ran meanwhile), its pod log directory,
// its container's log directory. The log says it too. The agent does not
// crash, not even when it is restarted on the full disk, /healthz stays
// ok, a pod that runs (and logs) keeps running and is adopted across the
// restart, once space is freed every waiting pod starts, and once their
// manifests are removed nothing of them is left.
func TestFaultFullDisk(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		var root, logs string
		a := startAgentWith(t, rt, agentOptions{beforeLaunch: func(a *agent) {
			root, logs = filepath.Join(a.dir, "rootfs"), filepath.Join(a.dir, "logsfs")
			mountSmallDisk(t, root)
			mountSmallDisk(t, logs)
			a.logsDir = filepath.Join(logs, "pods")
			// No disk eviction threshold: this is about the agent on a full
			// disk, not about its eviction of pods (eviction_test.go).
			a.args = append(a.args, "--root-dir", filepath.Join(root, "minikubelet"), "--pod-logs-dir", a.logsDir, "--eviction-hard", "memory.available<100Mi")
		}})
		a.writeManifest("before.yaml", diskPod("before", true))
		before := containerStatus(a.waitRunning("before", time.Minute), "main").ContainerID
		a.writeManifest("staged.yaml", stagedPod("staged"))
		polltest.Until(t, time.Minute, "staged's init container running", func() (bool, string) {
			p := a.pod("staged")
			if p == nil || len(p.Status.InitContainerStatuses) == 0 {
				return false, "no init container status"
			}
			return p.Status.InitContainerStatuses[0].State.Running != nil, describe(p)
		})

		// The agent runs on: healthy, the running pod untouched.
		check := func(when string) {
			t.Helper()
			polltest.Holds(t, 2*time.Second, "the agent healthy and the running pod untouched "+when, func() (bool, string) {
				body, code, err := a.get(a.healthz, "/healthz")
				p := a.pod("before")
				ok := a.alive() && err == nil && code == 200 && p != nil && allRunning(p) && containerStatus(p, "main").ContainerID == before && containerStatus(p, "main").RestartCount == 0
				return ok, fmt.Sprintf("alive %v, /healthz %d %q %v, before: %v", a.alive(), code, body, err, p)
			})
		}

		filler := fillDisk(t, root)
		a.writeManifest("late.yaml", diskPod("late", true))
		a.writeManifest("plain.yaml", diskPod("plain", false))
		for _, w := range [][2]string{{"late", "main"}, {"plain", "main"}, {"staged", "main"}} {
			t.Logf("root dir full: %s %s: %s", w[0], w[1], a.waitNoSpace(w[0], w[1], root))
		}
		if a.logLineWith("no space left on device") == "" {
			t.Error("the agent's log does not say the disk is full")
		}
		check("on the full disk")
		a.kill()
		a.restart()
		a.waitRunning("before", 30*time.Second)
		check("after a restart on the full disk")

		// The root dir freed, the logs dir full.
		if err := os.RemoveAll(filler); err != nil {
			t.Fatal(err)
		}
		filler = fillDisk(t, logs)
		a.writeManifest("late2.yaml", diskPod("late2", false))
		for _, w := range [][2]string{{"late2", "main"}, {"staged", "main"}} {
			t.Logf("logs dir full: %s %s: %s", w[0], w[1], a.waitNoSpace(w[0], w[1], logs))
		}
		check("on the full logs disk")

		if err := os.RemoveAll(filler); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"late", "plain", "staged", "late2"} {
			a.waitRunning(name, time.Minute)
		}
		// What the failed starts made (a container whose start failed)
		// goes with the pods.
		for _, name := range []string{"before", "staged", "late", "plain", "late2"} {
			a.removeManifest(name + ".yaml")
		}
		a.waitClean(nil, time.Minute)
	})
}
