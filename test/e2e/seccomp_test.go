package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// denyMkdir is a seccomp profile that allows every call but mkdir and
// mkdirat, which fail with EPERM.
const denyMkdir = `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}`

// seccompPod is the static pod name whose container runs with the
// Localhost seccomp profile, tries mkdir and says how it went.
func seccompPod(name, profile string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    securityContext:
      seccompProfile: {type: Localhost, localhostProfile: %s}
    command: ["sh", "-c", "mkdir /tmp/x && echo mkdir-allowed || echo mkdir-denied; grep Seccomp: /proc/self/status; sleep 3600"]
`, name, env.busybox, profile)
}

// A Localhost seccomp profile is read from <root-dir>/seccomp as the
// kubelet reads it and applied to the container (mkdir fails, the process
// is in seccomp filter mode); a profile that is not there fails the
// container with the kubelet's reason, CreateContainerError, and the
// runtime's message naming the file.
func TestSeccompLocalhostProfile(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		dir := filepath.Join(a.dir, "root", "seccomp", "profiles")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "deny-mkdir.json"), []byte(denyMkdir), 0o644); err != nil {
			t.Fatal(err)
		}
		a.writeManifest("confined.yaml", seccompPod("confined", "profiles/deny-mkdir.json"))
		a.writeManifest("missing.yaml", seccompPod("missing", "profiles/missing.json"))
		p := a.waitRunning("confined", 60*time.Second)
		a.waitLog(p, "main", 0, "mkdir-denied")
		a.waitLog(p, "main", 0, "Seccomp:\t2")

		missing := filepath.Join(a.dir, "root", "seccomp", "profiles", "missing.json")
		polltest.Until(t, 60*time.Second, "missing profile: CreateContainerError naming the file", func() (bool, string) {
			p := a.pod("missing")
			if p == nil {
				return false, "not on /pods"
			}
			cs := containerStatus(p, "main")
			if cs == nil || cs.State.Waiting == nil {
				return false, describe(p)
			}
			w := cs.State.Waiting
			return w.Reason == "CreateContainerError" && strings.Contains(w.Message, missing) && !strings.HasPrefix(w.Message, "rpc error"),
				fmt.Sprintf("%s: %s", w.Reason, w.Message)
		})
	})
}
