package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// A container's cpu and memory limits and cpu request reach its cgroup:
// the CFS quota over a 100ms period, the memory limit, and the cpu shares
// (cgroup v1) or weight (v2). The container reads them from inside.
func TestResourcesReachCgroup(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("limits.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: limits
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    resources:
      requests:
        cpu: 100m
        memory: 32Mi
      limits:
        cpu: 250m
        memory: 64Mi
    command:
    - sh
    - -c
    - |
      if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        echo "cgroup=v2 memory=$(cat /sys/fs/cgroup/memory.max) cpumax=$(cat /sys/fs/cgroup/cpu.max) weight=$(cat /sys/fs/cgroup/cpu.weight)"
      else
        echo "cgroup=v1 memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) period=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us) shares=$(cat /sys/fs/cgroup/cpu/cpu.shares)"
      fi
      exec sleep 3600
  - name: limit-only
    image: %[1]s
    resources:
      limits:
        cpu: 500m
    command:
    - sh
    - -c
    - |
      if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        echo "cgroup=v2 cpumax=$(cat /sys/fs/cgroup/cpu.max)"
      else
        echo "cgroup=v1 quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) shares=$(cat /sys/fs/cgroup/cpu/cpu.shares)"
      fi
      exec sleep 3600
`, env.busybox))
		pod := a.waitRunning("limits", 60*time.Second)

		line := settingsWaitLog(t, a, pod, "main", "cgroup=")
		t.Logf("main: %s", line)
		switch {
		case strings.Contains(line, "cgroup=v1"):
			for _, want := range []string{"memory=67108864", "quota=25000", "period=100000", "shares=102"} {
				if !strings.Contains(line, want) {
					t.Errorf("main's cgroup: %q, want %s", line, want)
				}
			}
		default:
			// runc maps shares 102 to weight 1+((102-2)*9999)/262142 = 4.
			for _, want := range []string{"memory=67108864", "cpumax=25000 100000", "weight=4"} {
				if !strings.Contains(line, want) {
					t.Errorf("main's cgroup: %q, want %s", line, want)
				}
			}
		}
		// With a limit and no request the request defaults to the limit.
		line = settingsWaitLog(t, a, pod, "limit-only", "cgroup=")
		t.Logf("limit-only: %s", line)
		want := []string{"quota=50000", "shares=512"}
		if strings.Contains(line, "cgroup=v2") {
			want = []string{"cpumax=50000 100000"}
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("limit-only's cgroup: %q, want %s", line, w)
			}
		}
	})
}

// securityContext fields take effect: runAsUser, runAsGroup and
// supplementalGroups from the pod (the other containers override user and
// group; containerd refuses a group without a user, for the sandbox too),
// readOnlyRootFilesystem, capabilities dropped and added, privileged,
// allowPrivilegeEscalation false, and the default masked /proc paths.
func TestSecurityContextApplies(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("secure.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: secure
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    supplementalGroups: [4000]
  containers:
  - name: ids
    image: %[1]s
    command: ["sh", "-c", "echo \"ids: $(id)\"; exec sleep 3600"]
  - name: readonly
    image: %[1]s
    securityContext:
      runAsUser: 0
      runAsGroup: 0
      readOnlyRootFilesystem: true
    command:
    - sh
    - -c
    - |
      if touch /probe 2>/dev/null; then echo "rootfs=writable"; else echo "rootfs=readonly"; fi
      exec sleep 3600
  - name: caps
    image: %[1]s
    securityContext:
      runAsUser: 0
      runAsGroup: 0
      allowPrivilegeEscalation: false
      capabilities:
        drop: ["ALL"]
        add: ["NET_BIND_SERVICE"]
    command:
    - sh
    - -c
    - |
      echo "caps: $(grep -E '^(CapEff|NoNewPrivs)' /proc/1/status | tr -s '\t\n' '  ')"
      exec sleep 3600
  - name: plain
    image: %[1]s
    securityContext:
      runAsUser: 0
      runAsGroup: 0
    command:
    - sh
    - -c
    - |
      echo "plain: $(grep -E '^(CapEff|NoNewPrivs)' /proc/1/status | tr -s '\t\n' '  ')"
      if [ -c /proc/keys ]; then echo "keys=masked"; elif [ -e /proc/keys ]; then echo "keys=visible"; else echo "keys=absent"; fi
      exec sleep 3600
  - name: priv
    image: %[1]s
    securityContext:
      runAsUser: 0
      runAsGroup: 0
      privileged: true
    command:
    - sh
    - -c
    - |
      echo "priv: $(grep -E '^CapEff' /proc/1/status | tr -s '\t\n' '  ')"
      if [ -c /proc/keys ]; then echo "keys=masked"; elif [ -e /proc/keys ]; then echo "keys=visible"; else echo "keys=absent"; fi
      exec sleep 3600
`, env.busybox))
		pod := a.waitRunning("secure", 60*time.Second)

		ids := settingsWaitLog(t, a, pod, "ids", "ids: ")
		t.Logf("%s", ids)
		for _, want := range []string{"uid=1000", "gid=3000", "4000"} {
			if !strings.Contains(ids, want) {
				t.Errorf("ids: %q, want %s", ids, want)
			}
		}
		if ro := settingsWaitLog(t, a, pod, "readonly", "rootfs="); !strings.Contains(ro, "rootfs=readonly") {
			t.Errorf("readonly: %q, want the root filesystem read-only", ro)
		}

		const netBindService, sysAdmin = 1 << 10, 1 << 21
		caps := settingsWaitLog(t, a, pod, "caps", "caps: ")
		t.Logf("%s", caps)
		if eff := capEff(t, caps); eff != netBindService {
			t.Errorf("caps: CapEff %#x, want only NET_BIND_SERVICE (%#x)", eff, netBindService)
		}
		if !regexp.MustCompile(`NoNewPrivs:\s*1`).MatchString(caps) {
			t.Errorf("caps: %q, want NoNewPrivs 1", caps)
		}

		plain := settingsWaitLog(t, a, pod, "plain", "plain: ")
		t.Logf("%s", plain)
		if eff := capEff(t, plain); eff&sysAdmin != 0 || eff&netBindService == 0 {
			t.Errorf("plain: CapEff %#x, want the runtime's default set (NET_BIND_SERVICE, no SYS_ADMIN)", eff)
		}
		if !regexp.MustCompile(`NoNewPrivs:\s*0`).MatchString(plain) {
			t.Errorf("plain: %q, want NoNewPrivs 0", plain)
		}
		if k := settingsWaitLog(t, a, pod, "plain", "keys="); !strings.Contains(k, "keys=masked") {
			t.Errorf("plain: %q, want /proc/keys masked (the Default procMount)", k)
		}

		priv := settingsWaitLog(t, a, pod, "priv", "priv: ")
		t.Logf("%s", priv)
		if eff := capEff(t, priv); eff&sysAdmin == 0 {
			t.Errorf("priv: CapEff %#x, want every capability (SYS_ADMIN among them)", eff)
		}
		if k := settingsWaitLog(t, a, pod, "priv", "keys="); !strings.Contains(k, "keys=visible") {
			t.Errorf("priv: %q, want /proc/keys visible in a privileged container", k)
		}
	})
}

// runAsNonRoot on an image that runs as root: the container is refused
// with the kubelet's CreateContainerConfigError and message; with a
// non-root runAsUser the same image runs.
func TestSecurityRunAsNonRoot(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("nonroot.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: nonroot
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
  containers:
  - name: refused
    image: %[1]s
    command: ["sleep", "3600"]
  - name: allowed
    image: %[1]s
    securityContext:
      runAsUser: 1000
    command: ["sleep", "3600"]
`, env.busybox))
		var refused *v1.ContainerStateWaiting
		polltest.Until(t, 60*time.Second, "refused waiting with CreateContainerConfigError, allowed running", func() (bool, string) {
			pod := a.pod("nonroot")
			if pod == nil {
				return false, "not on /pods"
			}
			r, ok := containerStatus(pod, "refused"), containerStatus(pod, "allowed")
			if r == nil || ok == nil || r.State.Waiting == nil || ok.State.Running == nil {
				return false, describe(pod)
			}
			refused = r.State.Waiting
			return refused.Reason == "CreateContainerConfigError", describe(pod)
		})
		pod := a.pod("nonroot")
		want := fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: refused)",
			fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID))
		if refused.Message != want {
			t.Errorf("message = %q\nwant      %q", refused.Message, want)
		}
		if pod.Status.Phase != v1.PodPending {
			t.Errorf("phase = %s, want Pending", pod.Status.Phase)
		}
	})
}

// A container's termination message: the content of the file it wrote at
// terminationMessagePath (the default /dev/termination-log, another path,
// as a non-root user on a read-only root), or, with
// FallbackToLogsOnError, the tail of its log when it failed without
// writing one.
func TestTerminationMessage(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("goodbye.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: goodbye
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: %[1]s
    command: ["sh", "-c", "printf bye > /dev/termination-log; exit 3"]
  - name: fallback
    image: %[1]s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "for i in $(seq 1 100); do echo line $i; done; exit 1"]
  - name: fallback-file-wins
    image: %[1]s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo noise; printf 'from file' > /dev/termination-log; exit 1"]
  - name: fallback-success
    image: %[1]s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo all good"]
  - name: custom-path
    image: %[1]s
    terminationMessagePath: /tmp/why
    command: ["sh", "-c", "printf custom > /tmp/why"]
  - name: nonroot
    image: %[1]s
    securityContext:
      runAsUser: 1000
      readOnlyRootFilesystem: true
    command: ["sh", "-c", "printf 'from 1000' > /dev/termination-log"]
`, env.busybox))
		var pod *v1.Pod
		polltest.Until(t, 60*time.Second, "every container of goodbye terminated", func() (bool, string) {
			pod = a.pod("goodbye")
			if pod == nil {
				return false, "not on /pods"
			}
			if len(pod.Status.ContainerStatuses) != 6 {
				return false, describe(pod)
			}
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.State.Terminated == nil {
					return false, describe(pod)
				}
			}
			return true, describe(pod)
		})
		var lines strings.Builder
		for i := 21; i <= 100; i++ {
			fmt.Fprintf(&lines, "line %d\n", i)
		}
		tests := []struct {
			container string
			exitCode  int32
			message   string
		}{
			{"file", 3, "bye"},
			{"fallback", 1, lines.String()}, // the last 80 lines
			{"fallback-file-wins", 1, "from file"},
			{"fallback-success", 0, ""},
			{"custom-path", 0, "custom"},
			{"nonroot", 0, "from 1000"},
		}
		for _, tt := range tests {
			term := containerStatus(pod, tt.container).State.Terminated
			if term.ExitCode != tt.exitCode || term.Message != tt.message {
				t.Errorf("%s: exit %d message %q, want exit %d message %q", tt.container, term.ExitCode, term.Message, tt.exitCode, tt.message)
			}
		}
		if pod.Status.Phase != v1.PodFailed {
			t.Errorf("phase = %s, want Failed", pod.Status.Phase)
		}
		// The file lives where the kubelet keeps it, under the pod's
		// directory: <root-dir>/pods/<uid>/containers/<name>/.
		path := filepath.Join(a.dir, "root", "pods", string(pod.UID), "containers", "file", "0")
		if b, err := os.ReadFile(path); err != nil || string(b) != "bye" {
			t.Errorf("%s: %q, %v; want bye", path, b, err)
		}
	})
}

// settingsWaitLog waits until the log of a container's first run has a
// line holding want, and returns that line.
func settingsWaitLog(t *testing.T, a *agent, pod *v1.Pod, container, want string) string {
	t.Helper()
	path := a.containerLog(pod, container, 0)
	var line string
	polltest.Until(t, 15*time.Second, fmt.Sprintf("%q in %s", want, path), func() (bool, string) {
		b, err := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, want) {
				line = l
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q (err %v)", b, err)
	})
	return line
}

// capEff parses the CapEff value out of a line holding /proc/<pid>/status
// lines.
func capEff(t *testing.T, line string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`CapEff:\s*([0-9a-f]+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no CapEff in %q", line)
	}
	v, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatalf("CapEff in %q: %v", line, err)
	}
	return v
}
