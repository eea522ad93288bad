package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// podDir is <root-dir>/pods/<uid> of one of the agent's pods.
func (a *agent) podDir(pod *v1.Pod) string {
	return filepath.Join(a.dir, "root", "pods", string(pod.UID))
}

// mountsUnder lists the mount points at or under dir in the test's (and
// the agent's) mount namespace.
func mountsUnder(t testing.TB, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// unmountUnder unmounts, deepest first, what is mounted under dir: the
// volumes of pods an agent left running when it stopped.
func unmountUnder(t testing.TB, dir string) {
	t.Helper()
	points := mountsUnder(t, dir)
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, 0); err != nil {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				t.Errorf("cleanup: unmount %s: %v", p, err)
			}
		}
	}
}

// An emptyDir shared by two containers: one writes a file, the other reads
// it, also through a subPath the agent creates in the volume.
func TestVolumeEmptyDirShared(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("shared.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: shared
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: writer
    image: %[1]s
    # sub/dir is made by the agent for the reader's subPath mount, which
    # may come after this container starts.
    command: ["sh", "-c", "echo hello-from-writer > /data/msg; until [ -d /data/sub/dir ]; do sleep 0.1; done; echo deep > /data/sub/dir/file; exec sleep 3600"]
    volumeMounts:
    - name: data
      mountPath: /data
  - name: reader
    image: %[1]s
    command: ["sh", "-c", "until [ -f /shared/msg ] && [ -f /sub/file ]; do sleep 0.1; done; echo \"read=$(cat /shared/msg) sub=$(cat /sub/file) mode=$(stat -c %%a /shared)\"; exec sleep 3600"]
    volumeMounts:
    - name: data
      mountPath: /shared
      readOnly: true
    - name: data
      mountPath: /sub
      subPath: sub/dir
`, env.busybox))
		pod := a.waitRunning("shared", 60*time.Second)
		line := settingsWaitLog(t, a, pod, "reader", "read=")
		if !strings.Contains(line, "read=hello-from-writer sub=deep mode=777") {
			t.Errorf("reader saw %q, want read=hello-from-writer sub=deep mode=777", line)
		}
		host := filepath.Join(a.podDir(pod), "volumes", "kubernetes.io~empty-dir", "data", "msg")
		if b, err := os.ReadFile(host); err != nil || string(b) != "hello-from-writer\n" {
			t.Errorf("%s on the host: %q, %v", host, b, err)
		}
	})
}

// A memory-backed emptyDir is a tmpfs of the sizeLimit in the container.
func TestVolumeEmptyDirMemory(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("tmpfs.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: tmpfs
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: scratch
    emptyDir:
      medium: Memory
      sizeLimit: 16Mi
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo \"mount=$(grep ' /scratch ' /proc/mounts)\"; exec sleep 3600"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
`, env.busybox))
		pod := a.waitRunning("tmpfs", 60*time.Second)
		line := settingsWaitLog(t, a, pod, "main", "mount=")
		if !strings.Contains(line, "mount=tmpfs /scratch tmpfs ") || !strings.Contains(line, "size=16384k") {
			t.Errorf("container's /proc/mounts: %q, want a tmpfs at /scratch with size=16384k", line)
		}
	})
}

// hostPath volumes of every type: the checks pass on real files of each
// kind and the *OrCreate types create what is missing; a pod whose checks
// fail starts nothing, waits in ContainerCreating with a message naming
// each failing volume, and starts once the paths are right.
func TestVolumeHostPathTypes(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		host := t.TempDir()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Mkdir(filepath.Join(host, "dir"), 0o755))
		must(os.WriteFile(filepath.Join(host, "dir", "hello"), []byte("from the host\n"), 0o644))
		must(os.WriteFile(filepath.Join(host, "file"), []byte("a file\n"), 0o644))
		l, err := net.Listen("unix", filepath.Join(host, "sock"))
		must(err)
		t.Cleanup(func() { l.Close() })

		a.writeManifest("hostpaths.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: hostpaths
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: dir, hostPath: {path: %[2]s/dir, type: Directory}}
  - {name: mkdir, hostPath: {path: %[2]s/made/here, type: DirectoryOrCreate}}
  - {name: file, hostPath: {path: %[2]s/file, type: File}}
  - {name: mkfile, hostPath: {path: %[2]s/new-file, type: FileOrCreate}}
  - {name: sock, hostPath: {path: %[2]s/sock, type: Socket}}
  - {name: devnull, hostPath: {path: /dev/null, type: CharDevice}}
  - {name: any, hostPath: {path: %[2]s/dir}}
  containers:
  - name: main
    image: %[1]s
    command:
    - sh
    - -c
    - |
      test -d /dir && test -d /mkdir && test -f /file && test -f /mkfile && test -S /sock && test -c /null && echo types-ok
      echo "hello=$(cat /dir/hello) file=$(cat /file)"
      echo written > /mkdir/out
      exec sleep 3600
    volumeMounts:
    - {name: dir, mountPath: /dir}
    - {name: mkdir, mountPath: /mkdir}
    - {name: file, mountPath: /file}
    - {name: mkfile, mountPath: /mkfile}
    - {name: sock, mountPath: /sock}
    - {name: devnull, mountPath: /null}
    - {name: any, mountPath: /any}
`, env.busybox, host))
		pod := a.waitRunning("hostpaths", 60*time.Second)
		settingsWaitLog(t, a, pod, "main", "types-ok")
		if line := settingsWaitLog(t, a, pod, "main", "hello="); !strings.Contains(line, "hello=from the host file=a file") {
			t.Errorf("container read %q", line)
		}
		polltest.Until(t, 10*time.Second, "the container's file in the DirectoryOrCreate volume", func() (bool, string) {
			b, err := os.ReadFile(filepath.Join(host, "made", "here", "out"))
			return err == nil && string(b) == "written\n", fmt.Sprintf("%q, %v", b, err)
		})
		for path, want := range map[string]os.FileMode{filepath.Join(host, "made", "here"): os.ModeDir | 0o755, filepath.Join(host, "new-file"): 0o644} {
			if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
				t.Errorf("%s: %v, %v; want mode %v", path, fi.Mode(), err, want)
			}
		}

		// Failing checks: a missing Directory and a Socket that is a file.
		missing := filepath.Join(host, "missing")
		notSock := filepath.Join(host, "not-a-socket")
		must(os.WriteFile(notSock, nil, 0o644))
		a.writeManifest("missing.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: missing
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, hostPath: {path: %[2]s, type: Directory}}
  - {name: sock, hostPath: {path: %[3]s, type: Socket}}
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: sock, mountPath: /sock}
`, env.busybox, missing, notSock))
		wantMsgs := []string{
			fmt.Sprintf(`volume "data": hostPath type Directory: %s does not exist`, missing),
			fmt.Sprintf(`volume "sock": hostPath type Socket: %s is a regular file, not a socket`, notSock),
		}
		polltest.Until(t, 30*time.Second, "missing waiting on its volumes", func() (bool, string) {
			p := a.pod("missing")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "main")
			if cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
				return false, describe(p)
			}
			for _, m := range wantMsgs {
				if !strings.Contains(cs.State.Waiting.Message, m) {
					return false, describe(p)
				}
			}
			return true, ""
		})
		if sandboxExists(t.Context(), t, rt, a.podName("missing")) {
			t.Error("a sandbox was started for a pod whose volumes failed")
		}
		// Fixed on the host: the pod starts at a retry.
		must(os.Mkdir(missing, 0o755))
		must(os.Remove(notSock))
		l2, err := net.Listen("unix", notSock)
		must(err)
		t.Cleanup(func() { l2.Close() })
		a.waitRunning("missing", 60*time.Second)
	})
}

// A downwardAPI volume's files hold what the kubelet writes, byte for
// byte, and follow a label edit.
func TestVolumeDownwardAPI(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		manifest := func(tier string) string {
			return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: info
  labels:
    app: web
    tier: %[2]s
  annotations:
    note: "two\nlines"
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: note, fieldRef: {fieldPath: "metadata.annotations['note']"}}
      - {path: meta/name, fieldRef: {fieldPath: metadata.name}}
      - {path: cpu, resourceFieldRef: {containerName: main, resource: limits.cpu, divisor: 1m}}
      - {path: mem, resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}, mode: 0400}
  containers:
  - name: main
    image: %[1]s
    resources:
      limits: {cpu: 250m, memory: 64Mi}
    command:
    - sh
    - -c
    - |
      echo "name=$(cat /podinfo/meta/name) cpu=$(cat /podinfo/cpu) mem=$(cat /podinfo/mem) bytes=$(wc -c < /podinfo/labels) mode=$(stat -L -c %%a /podinfo/mem) note=$(cat /podinfo/note | tr '\n' '|')"
      while true; do echo "labels=$(cat /podinfo/labels | tr '\n' '|')"; sleep 0.5; done
    volumeMounts:
    - {name: podinfo, mountPath: /podinfo}
`, env.busybox, tier)
		}
		a.writeManifest("info.yaml", manifest("front"))
		pod := a.waitRunning("info", 60*time.Second)
		want := fmt.Sprintf("name=%s cpu=250 mem=64 bytes=%d mode=400 note=two|lines", pod.Name, len(`app="web"`+"\n"+`tier="front"`))
		if line := settingsWaitLog(t, a, pod, "main", "name="); !strings.Contains(line, want) {
			t.Errorf("container read %q, want %q", line, want)
		}
		settingsWaitLog(t, a, pod, "main", `labels=app="web"|tier="front"`)

		// A label edit reaches the file (the container may be restarted
		// for it, with the same content read again).
		a.writeManifest("info.yaml", manifest("back"))
		polltest.Until(t, 30*time.Second, "the new label in the volume", func() (bool, string) {
			p := a.pod("info")
			if p == nil {
				return false, "not on /pods"
			}
			for restart := 0; restart < 3; restart++ {
				b, _ := os.ReadFile(a.containerLog(p, "main", restart))
				if strings.Contains(string(b), `labels=app="web"|tier="back"`) {
					return true, ""
				}
			}
			return false, describe(p)
		})
	})
}

// Deleting a pod unmounts its volumes and removes its directory; host
// files bind-mounted through a subPath are left alone.
func TestVolumeTeardown(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		host := t.TempDir()
		if err := os.MkdirAll(filepath.Join(host, "keep"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, "keep", "precious"), []byte("host data"), 0o644); err != nil {
			t.Fatal(err)
		}
		a.writeManifest("gone.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: gone
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: mem, emptyDir: {medium: Memory}}
  - {name: disk, emptyDir: {}}
  - {name: info, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}
  - {name: host, hostPath: {path: %[2]s, type: Directory}}
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "echo x > /mem/f; echo y > /disk/f; exec sleep 3600"]
    volumeMounts:
    - {name: mem, mountPath: /mem}
    - {name: disk, mountPath: /disk/sub, subPath: a/b}
    - {name: disk, mountPath: /disk}
    - {name: info, mountPath: /info}
    - {name: host, mountPath: /keep, subPath: keep}
`, env.busybox, host))
		pod := a.waitRunning("gone", 60*time.Second)
		dir := a.podDir(pod)
		if got := mountsUnder(t, dir); len(got) != 4 {
			t.Errorf("mounts under %s: %q, want two tmpfs and two subPath binds", dir, got)
		}
		a.removeManifest("gone.yaml")
		polltest.Until(t, 60*time.Second, "the pod's directory removed", func() (bool, string) {
			_, err := os.Stat(dir)
			return os.IsNotExist(err), fmt.Sprintf("stat: %v; mounts: %q", err, mountsUnder(t, dir))
		})
		if got := mountsUnder(t, dir); len(got) != 0 {
			t.Errorf("mounts left: %q", got)
		}
		if b, err := os.ReadFile(filepath.Join(host, "keep", "precious")); err != nil || string(b) != "host data" {
			t.Errorf("the host's file after teardown: %q, %v", b, err)
		}
		if a.pod("gone") != nil || sandboxExists(t.Context(), t, rt, pod.Name) {
			t.Error("the pod is still there")
		}
	})
}

// Housekeeping removes what a crash left under <root-dir>/pods: the
// directory of a pod nothing refers to, after unmounting its volumes.
func TestVolumeHousekeepingRemovesStalePodDirs(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		stale := filepath.Join(a.dir, "root", "pods", "0badc0de-stale", "volumes", "kubernetes.io~empty-dir", "mem")
		if err := os.MkdirAll(stale, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", stale, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stale, "f"), []byte("left behind"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A running pod's directory stays.
		a.writeManifest("live.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: live
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: mem, emptyDir: {medium: Memory}}
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: mem, mountPath: /mem}
`, env.busybox))
		pod := a.waitRunning("live", 60*time.Second)
		podsDir := filepath.Join(a.dir, "root", "pods")
		polltest.Until(t, 30*time.Second, "the stale pod directory removed", func() (bool, string) {
			_, err := os.Stat(filepath.Join(podsDir, "0badc0de-stale"))
			return os.IsNotExist(err), fmt.Sprintf("stat: %v; mounts: %q", err, mountsUnder(t, filepath.Join(podsDir, "0badc0de-stale")))
		})
		if got := mountsUnder(t, filepath.Join(podsDir, "0badc0de-stale")); len(got) != 0 {
			t.Errorf("mounts left: %q", got)
		}
		if got := mountsUnder(t, a.podDir(pod)); len(got) != 1 {
			t.Errorf("the live pod's mounts: %q, want its tmpfs", got)
		}
	})
}
