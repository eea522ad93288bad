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

// The agent's --root-dir and --pod-logs-dir on a small filesystem (a tmpfs
// of 16MiB and 4096 inodes), which then fills up (blocks and inodes). Pods
// added then cannot start (their pod and log directories, emptyDir volume
// and termination message file cannot be made): /pods shows why, naming
// the cause ("no space left on device"), and so does the log. The agent
// does not crash, not even when it is restarted on the full disk, /healthz
// stays ok, a pod that runs keeps running (its log cannot grow) and is
// adopted across the restart, and once space is freed the waiting pods
// start.
func TestFaultFullDisk(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		var disk string
		a := startAgentWith(t, rt, agentOptions{beforeLaunch: func(a *agent) {
			disk = filepath.Join(a.dir, "disk")
			if err := os.Mkdir(disk, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=16m,nr_inodes=4096,mode=0755"); err != nil {
				t.Fatalf("mount a tmpfs at %s: %v", disk, err)
			}
			// The agent's cleanup unmounts what is under its dir, the
			// tmpfs too; this one runs after it, should that fail.
			t.Cleanup(func() {
				if err := syscall.Unmount(disk, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					t.Errorf("cleanup: unmount %s: %v", disk, err)
				}
			})
			a.logsDir = filepath.Join(disk, "logs")
			a.args = append(a.args, "--root-dir", filepath.Join(disk, "root"), "--pod-logs-dir", a.logsDir)
		}})
		a.writeManifest("before.yaml", diskPod("before", true))
		before := containerStatus(a.waitRunning("before", time.Minute), "main").ContainerID

		filler := fillDisk(t, disk)
		var st syscall.Statfs_t
		if err := syscall.Statfs(disk, &st); err == nil {
			t.Logf("disk full: %d blocks and %d inodes free", st.Bavail, st.Ffree)
		}
		a.writeManifest("late.yaml", diskPod("late", true))
		a.writeManifest("plain.yaml", diskPod("plain", false))
		for _, name := range []string{"late", "plain"} {
			waitFor(t, time.Minute, name+" waiting, saying why", func() (bool, string) {
				p := a.pod(name)
				if p == nil {
					return false, "not on /pods"
				}
				cs := containerStatus(p, "main")
				return cs != nil && cs.State.Waiting != nil && strings.Contains(cs.State.Waiting.Message, "no space left on device"), describe(p)
			})
			t.Logf("%s: %s", name, describe(a.pod(name)))
		}
		if line := a.logLineWith("no space left on device"); line == "" {
			t.Error("the agent's log does not say the disk is full")
		}

		// The agent runs on: healthy, the running pod untouched, also
		// across a restart on the full disk.
		check := func(when string) {
			t.Helper()
			holdsFor(t, 2*time.Second, "the agent healthy and the running pod untouched "+when, func() (bool, string) {
				body, code, err := a.get(a.healthz, "/healthz")
				p := a.pod("before")
				ok := a.alive() && err == nil && code == 200 && p != nil && allRunning(p) && containerStatus(p, "main").ContainerID == before && containerStatus(p, "main").RestartCount == 0
				return ok, fmt.Sprintf("alive %v, /healthz %d %q %v, before: %v", a.alive(), code, body, err, p)
			})
		}
		check("on the full disk")
		a.kill()
		a.restart()
		a.waitRunning("before", 30*time.Second)
		check("after a restart on the full disk")

		if err := os.RemoveAll(filler); err != nil {
			t.Fatal(err)
		}
		a.waitRunning("late", time.Minute)
		a.waitRunning("plain", time.Minute)
	})
}
