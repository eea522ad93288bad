package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// TestImageVolume: a static pod mounts two image volumes, the local
// busybox image (pullPolicy Never) and the probeserver image, which the
// runtime lacks and the agent pulls from a registry (IfNotPresent). On
// containerd 2.1 the container reads both, read-only; a subPath into an
// image is refused there (2.1 would mount the whole image), naming the
// volumeMount. On containerd 1.6, which cannot mount images, the pod
// never starts: its container waits with a message naming the volume.
func TestImageVolume(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	probe, err := env.bed.Image(ctrdtest.RoleProbe)
	if err != nil {
		t.Fatal(err)
	}
	wantPasswd, err := os.ReadFile("../images/busybox/passwd")
	if err != nil {
		t.Fatal(err)
	}
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "volume-" + rt.Name()
		reg.push(t, "oci-archive:"+probe.Tar, "minikubelet/probeserver", tag)
		remote := reg.ref("minikubelet/probeserver", tag)
		a := startAgent(t, rt)
		a.writeManifest("imgvol.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: imgvol
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: local
    image: {reference: "%[1]s", pullPolicy: Never}
  - name: remote
    image: {reference: "%[2]s", pullPolicy: IfNotPresent}
  containers:
  - name: reader
    image: %[1]s
    imagePullPolicy: Never
    command: ["sh", "-c", "echo \"passwd=$(tr '\\n' , < /local/etc/passwd) remote=$(ls /remote | tr '\\n' ,) $(touch /local/x 2>/dev/null && echo writable || echo read-only)\"; exec sleep 3600"]
    volumeMounts:
    - {name: local, mountPath: /local}
    - {name: remote, mountPath: /remote}
`, env.busybox, remote))

		switch rt.Name() {
		case "containerd-2.1":
			pod := a.waitRunning("imgvol", 60*time.Second)
			line := settingsWaitLog(t, a, pod, "reader", "passwd=")
			want := fmt.Sprintf("passwd=%s remote=probeserver,tmp, read-only", strings.ReplaceAll(string(wantPasswd), "\n", ","))
			if !strings.Contains(line, want) {
				t.Errorf("reader saw %q, want %q", line, want)
			}
			if !imagePresent(t, rt, remote) || reg.manifestRequests("minikubelet/probeserver", tag) == 0 {
				t.Errorf("%s was not pulled from the registry", remote)
			}

			a.writeManifest("imgsub.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: imgsub
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: local
    image: {reference: "%[1]s", pullPolicy: Never}
  containers:
  - name: reader
    image: %[1]s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: local, mountPath: /etc-of-image, subPath: etc}
`, env.busybox))
			waitWaiting(t, a, "imgsub", "CreateContainerConfigError",
				`volumeMount "local" at /etc-of-image: subPath "etc" of an image volume needs a container runtime that mounts part of an image (containerd 2.2 or later, CRI-O 1.33 or later); this node's containerd 2.1`)
		case "containerd-1.6":
			waitWaiting(t, a, "imgvol", "ContainerCreating",
				`volume "local": image volumes need a container runtime that mounts images through CRI (containerd 2.1 or later, CRI-O 1.31 or later); this node's containerd 1.6`)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sandboxes, _, err := runtimePods(ctx, rt, a.node)
			if err != nil {
				t.Fatal(err)
			}
			if len(sandboxes) != 0 {
				t.Errorf("the runtime holds %d sandboxes of the node: the pod must not run without its volume", len(sandboxes))
			}
		default:
			t.Fatalf("no expectation for image volumes on %s", rt.Name())
		}
	})
}

// waitWaiting waits until the static pod name's container waits with
// reason and a message containing msg.
func waitWaiting(t *testing.T, a *agent, name, reason, msg string) {
	t.Helper()
	polltest.Until(t, 30*time.Second, fmt.Sprintf("%s waiting with %s", name, reason), func() (bool, string) {
		p := a.pod(name)
		if p == nil {
			return false, "not on /pods"
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == reason && strings.Contains(w.Message, msg) {
				return true, ""
			}
		}
		return false, describe(p)
	})
}
