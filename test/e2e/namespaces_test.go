package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// hostPID and hostIPC put the pod's containers in the node's PID and IPC
// namespaces: the container sees the node's PID 1 and the test's own IPC
// namespace.
func TestHostPIDAndIPC(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		hostIPC, err := os.Readlink("/proc/self/ns/ipc")
		if err != nil {
			t.Fatal(err)
		}
		hostPID, err := os.Readlink("/proc/self/ns/pid")
		if err != nil {
			t.Fatal(err)
		}
		a := startAgent(t, rt)
		a.writeManifest("hostns.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: hostns
spec:
  hostNetwork: true
  hostPID: true
  hostIPC: true
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo ipc=$(readlink /proc/self/ns/ipc) pid=$(readlink /proc/self/ns/pid); exec sleep 3600"]
`, env.busybox))
		pod := a.waitRunning("hostns", 60*time.Second)
		want := fmt.Sprintf("ipc=%s pid=%s", hostIPC, hostPID)
		polltest.Until(t, 10*time.Second, "the container in the node's namespaces", func() (bool, string) {
			b, err := os.ReadFile(a.containerLog(pod, "main", 0))
			return err == nil && strings.Contains(string(b), want), fmt.Sprintf("log %q, want %q", b, want)
		})
	})
}
