package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The repository every pull test pushes to; each runtime's subtest uses its
// own tag, since both share the test's registry.
const pullRepo = "minikubelet/busybox"

// Each runtime pulls from a plain-HTTP registry on 127.0.0.1 straight over
// CRI, with no registry configuration: both containerd 1.6 and 2.1 use
// plain HTTP for a loopback registry by default. This is what the other
// pull tests stand on.
func TestRegistryServesBothRuntimes(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "direct-" + rt.Name()
		reg.push(t, busyboxArchive(t), pullRepo, tag)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := rt.Images().PullImage(ctx, &runtimeapi.ImageSpec{Image: reg.ref(pullRepo, tag)}, nil, nil); err != nil {
			t.Fatalf("pull over CRI: %v", err)
		}
		if n := reg.manifestRequests(pullRepo, tag); n == 0 {
			t.Error("the registry saw no manifest request")
		}
	})
}

// IfNotPresent pulls an image the runtime lacks, and the pod runs it.
func TestImagePullIfNotPresent(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "ifnotpresent-" + rt.Name()
		reg.push(t, busyboxArchive(t), pullRepo, tag)
		image := reg.ref(pullRepo, tag)
		if imagePresent(t, rt, image) {
			t.Fatalf("%s is in the runtime before the test", image)
		}

		a := startAgent(t, rt)
		a.writeManifest("pulled.yaml", pullPod("pulled", image, v1.PullIfNotPresent))
		pod := a.waitRunning("pulled", 60*time.Second)
		if !imagePresent(t, rt, image) {
			t.Errorf("%s not in the runtime after the pod ran", image)
		}
		if n := reg.manifestRequests(pullRepo, tag); n == 0 {
			t.Error("the registry saw no request for the image")
		}
		if cs := containerStatus(pod, "main"); cs == nil || cs.ImageID == "" {
			t.Errorf("container status %+v: want an image ID", cs)
		}
	})
}

// Never with a missing image: the container waits with ErrImageNeverPull
// and nothing is pulled, though the registry has the image.
func TestImagePullNever(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "never-" + rt.Name()
		reg.push(t, busyboxArchive(t), pullRepo, tag)
		image := reg.ref(pullRepo, tag)

		a := startAgent(t, rt)
		a.writeManifest("never.yaml", pullPod("never", image, v1.PullNever))
		w := a.waitWaiting("never", "main", 60*time.Second, "ErrImageNeverPull")
		t.Logf("ErrImageNeverPull: %s", w.Message)
		if !strings.Contains(w.Message, image) {
			t.Errorf("message %q does not name the image", w.Message)
		}
		// Let the worker retry a few times: still nothing pulled.
		polltest.Until(t, 30*time.Second, "the sync retried", func() (bool, string) {
			n := a.countLogLines("Pod sync failed; will retry")
			return n >= 3, fmt.Sprintf("%d failed syncs", n)
		})
		if n := reg.manifestRequests(pullRepo, tag); n != 0 {
			t.Errorf("the registry saw %d manifest requests, want none", n)
		}
		if imagePresent(t, rt, image) {
			t.Errorf("%s was pulled", image)
		}
	})
}

// A tag the registry lacks: the container waits with ErrImagePull, then,
// at a sync within the back-off, ImagePullBackOff; pulls are spaced out by
// the back-off; the pod's other container runs undisturbed and the agent
// stays healthy.
func TestImagePullBackOff(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "missing-" + rt.Name()
		image := reg.ref(pullRepo, tag)

		a := startAgent(t, rt)
		a.writeManifest("backoff.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: backoff
spec:
  containers:
  - name: missing
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
  - name: fine
    image: %s
    command: ["sleep", "3600"]
`, image, env.busybox))
		// ErrImagePull shows until the next sync, which any event of the
		// pod's may bring within the back-off: it may take a second
		// failure (10s later) to see it.
		w := a.waitWaiting("backoff", "missing", 60*time.Second, "ErrImagePull")
		t.Logf("ErrImagePull: %s", w.Message)
		if !strings.Contains(w.Message, image) || !strings.Contains(strings.ToLower(w.Message), "not found") {
			t.Errorf("ErrImagePull message %q: want the image and the runtime's not found", w.Message)
		}
		pod := a.pod("backoff")
		fine := containerStatus(pod, "fine")
		if fine == nil || fine.State.Running == nil {
			t.Fatalf("the other container does not run: %s", describe(pod))
		}

		// The first back-off is 10s; the second 20s, and the agent
		// reports it 10s into it.
		w = a.waitWaiting("backoff", "missing", 60*time.Second, "ImagePullBackOff")
		t.Logf("ImagePullBackOff: %s", w.Message)
		if !strings.HasPrefix(w.Message, fmt.Sprintf("Back-off pulling image %q (next attempt in ", image)) || !strings.Contains(strings.ToLower(w.Message), "not found") {
			t.Errorf("ImagePullBackOff message %q: want the image, the time left and the last error", w.Message)
		}
		// Two or three attempts by now (about 20s in), each a HEAD or GET
		// or two of the manifest: nothing like a retry every sync.
		if n := reg.manifestRequests(pullRepo, tag); n == 0 || n > 8 {
			t.Errorf("the registry saw %d manifest requests for the missing tag; want a few", n)
		}

		pod = a.pod("backoff")
		if now := containerStatus(pod, "fine"); now == nil || now.State.Running == nil || now.ContainerID != fine.ContainerID || now.RestartCount != 0 {
			t.Errorf("the other container was disturbed: was %s, now %s", fine.ContainerID, describe(pod))
		}
		if body, code, err := a.get(a.healthz, "/healthz"); err != nil || code != 200 {
			t.Errorf("/healthz = %d %q %v, want 200", code, body, err)
		}
		if !a.alive() {
			t.Error("the agent exited")
		}
	})
}

// A registry that wants credentials: without any the pull fails as
// unauthorized; once <root-dir>/config.json holds them, the next attempt
// (after the 10s back-off) succeeds.
func TestImagePullWithCredentials(t *testing.T) {
	reg := startRegistry(t, registryOptions{auth: true})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "auth-" + rt.Name()
		reg.push(t, busyboxArchive(t), pullRepo, tag)
		image := reg.ref(pullRepo, tag)

		a := startAgent(t, rt)
		a.writeManifest("private.yaml", pullPod("private", image, v1.PullIfNotPresent))
		// Right after the failure ErrImagePull, from the next sync on
		// ImagePullBackOff; both carry the runtime's error.
		w := a.waitWaiting("private", "main", 60*time.Second, "ErrImagePull", "ImagePullBackOff")
		t.Logf("%s: %s", w.Reason, w.Message)
		// containerd 1.6 says "401 Unauthorized", 2.1 "authorization failed".
		if !regexp.MustCompile(`(?i)401|unauthorized|authoriz`).MatchString(w.Message) {
			t.Errorf("ErrImagePull message %q does not say the registry refused", w.Message)
		}

		// What `docker login` writes, for this registry and path prefix
		// (the longest match wins), next to a wrong one for the host.
		auth := base64.StdEncoding.EncodeToString([]byte(reg.user + ":" + reg.password))
		wrong := base64.StdEncoding.EncodeToString([]byte("nobody:wrong"))
		config := fmt.Sprintf(`{"auths": {"%[1]s": {"auth": %[2]q}, "http://%[1]s/v2/minikubelet": {"auth": %[3]q}}}`, reg.addr, wrong, auth)
		root := filepath.Join(a.dir, "root")
		if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		a.waitRunning("private", 60*time.Second)
		if !imagePresent(t, rt, image) {
			t.Errorf("%s not in the runtime", image)
		}
	})
}

// Always pulls even when the image is present, and a pod restarted after
// the tag moved runs the new image.
func TestImagePullAlways(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "always-" + rt.Name()
		variant := func(v string) string {
			return busyboxVariant(t, func(c *ocispec.ImageConfig) { c.Env = append(c.Env, "VARIANT="+v) })
		}
		reg.push(t, variant("a"), pullRepo, tag)
		image := reg.ref(pullRepo, tag)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := rt.Images().PullImage(ctx, &runtimeapi.ImageSpec{Image: image}, nil, nil); err != nil {
			t.Fatalf("pre-pull: %v", err)
		}
		before := reg.manifestRequests(pullRepo, tag)

		a := startAgent(t, rt)
		manifest := func(rev string) string {
			return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: always
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sh", "-c", "echo variant=$VARIANT; exec sleep 3600"]
    env:
    - name: REV
      value: %q
`, image, rev)
		}
		a.writeManifest("always.yaml", manifest("1"))
		pod := a.waitRunning("always", 60*time.Second)
		if n := reg.manifestRequests(pullRepo, tag); n <= before {
			t.Errorf("manifest requests %d -> %d: Always did not pull a present image", before, n)
		}
		first := containerStatus(pod, "main")
		a.waitLog(pod, "main", 0, "variant=a")

		// The tag moves to another image; a spec change restarts the
		// container, and Always pulls the new one.
		reg.push(t, variant("b"), pullRepo, tag)
		a.writeManifest("always.yaml", manifest("2"))
		var second *v1.ContainerStatus
		polltest.Until(t, 60*time.Second, "restart with the new image", func() (bool, string) {
			pod = a.pod("always")
			second = containerStatus(pod, "main")
			return second != nil && second.State.Running != nil && second.RestartCount == 1, describe(pod)
		})
		a.waitLog(pod, "main", 1, "variant=b")
		if second.ImageID == first.ImageID {
			t.Errorf("image ID %s did not change after the tag moved", second.ImageID)
		}
	})
}

// The image's entrypoint, cmd, env and working dir combine with the pod's
// as Kubernetes defines: no command and no args run entrypoint + cmd; args
// alone replace cmd and keep the entrypoint; a command replaces both; the
// image's env is there with the pod's winning; workingDir overrides the
// image's. containerd does the combining from the CRI config, which leaves
// Command, Args and WorkingDir empty when the pod does.
func TestImageConfigCombinesWithPod(t *testing.T) {
	reg := startRegistry(t, registryOptions{})
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		tag := "config-" + rt.Name()
		reg.push(t, busyboxVariant(t, func(c *ocispec.ImageConfig) {
			c.Entrypoint = []string{"/bin/sh", "-c"}
			c.Cmd = []string{"echo image-cmd from $PWD; exec sleep 3600"}
			c.Env = append(c.Env, "FROM_IMAGE=image", "OVERRIDE=image")
			c.WorkingDir = "/tmp"
		}), pullRepo, tag)
		image := reg.ref(pullRepo, tag)

		a := startAgent(t, rt)
		a.writeManifest("combine.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: combine
spec:
  containers:
  - name: defaults
    image: %[1]s
    imagePullPolicy: IfNotPresent
  - name: args
    image: %[1]s
    imagePullPolicy: IfNotPresent
    args: ["echo args-only $0 $FROM_IMAGE $OVERRIDE from $PWD; exec sleep 3600"]
    env:
    - name: OVERRIDE
      value: pod
  - name: command
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo command-only $0 $FROM_IMAGE from $PWD; exec sleep 3600"]
    workingDir: /etc
`, image))
		pod := a.waitRunning("combine", 60*time.Second)
		// Entrypoint + cmd, in the image's working dir.
		a.waitLog(pod, "defaults", 0, "image-cmd from /tmp")
		// Entrypoint + args: sh -c "<args>", so $0 is sh; the image's env
		// with the pod's OVERRIDE.
		a.waitLog(pod, "args", 0, "args-only /bin/sh image pod from /tmp")
		// The command alone: the image's cmd is not appended (it would be
		// $0), and workingDir wins.
		a.waitLog(pod, "command", 0, "command-only sh image from /etc")
	})
}

// pullPod is a one-container pod running sleep from image.
func pullPod(name, image string, policy v1.PullPolicy) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: main
    image: %s
    imagePullPolicy: %s
    command: ["sleep", "3600"]
`, name, image, policy)
}

// waitWaiting waits until container of the static pod name waits with one
// of reasons, and returns its waiting state.
func (a *agent) waitWaiting(name, container string, timeout time.Duration, reasons ...string) *v1.ContainerStateWaiting {
	a.t.Helper()
	var w *v1.ContainerStateWaiting
	polltest.Until(a.t, timeout, fmt.Sprintf("%s/%s waiting with %s", name, container, strings.Join(reasons, " or ")), func() (bool, string) {
		pod := a.pod(name)
		if pod == nil {
			return false, "not on /pods"
		}
		cs := containerStatus(pod, container)
		if cs == nil || cs.State.Waiting == nil {
			return false, describe(pod)
		}
		w = cs.State.Waiting
		return slices.Contains(reasons, w.Reason), describe(pod)
	})
	return w
}

// waitLog waits until the log of a container's run holds want.
func (a *agent) waitLog(pod *v1.Pod, container string, restart int, want string) {
	a.t.Helper()
	path := a.containerLog(pod, container, restart)
	polltest.Until(a.t, 15*time.Second, fmt.Sprintf("%q in %s", want, path), func() (bool, string) {
		b, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(b), want), fmt.Sprintf("%q (err %v)", b, err)
	})
}

// imagePresent reports whether the runtime holds image.
func imagePresent(t *testing.T, rt *ctrdtest.Containerd, image string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rt.Images().ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	if err != nil {
		t.Fatalf("image status of %s: %v", image, err)
	}
	return resp.GetImage() != nil
}
