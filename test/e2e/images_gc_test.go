package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Image GC removes images from its runtime, and the suite's two shared
// daemons serve every other test: these tests run against a private
// containerd each (forEachPrivateRuntime).

// With thresholds that make every pass collect (high 1%, low 0%) and no
// minimum age, an image no container uses goes at the first pass, while
// the image of a running pod and the sandbox image (pinned by containerd
// 2.x, named by the CRI config of 1.6) stay; once the pod is gone, its
// image goes at a later pass and the sandbox image still stays.
func TestImageGC(t *testing.T) {
	forEachPrivateRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd, bed *ctrdtest.Bed) {
		pause, probe, busybox := bedRef(t, bed, ctrdtest.RolePause), bedRef(t, bed, ctrdtest.RoleProbe), bedRef(t, bed, ctrdtest.RoleBusybox)
		// The pod runs before garbage collection turns on: the agent
		// starts with the default thresholds and a minimum age that
		// keeps everything.
		a := startAgent(t, rt, "--minimum-image-ttl-duration", "1h")
		a.writeManifest("keep.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: keep
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, busybox))
		before := containerStatus(a.waitRunning("keep", 60*time.Second), "main")
		for _, ref := range []string{pause, probe, busybox} {
			if !imagePresent(t, rt, ref) {
				t.Fatalf("%s is not in the runtime before garbage collection", ref)
			}
		}

		// Restarted to collect everything it can; the pod keeps running.
		a.stop()
		a.args = append(a.args, "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0",
			"--minimum-image-ttl-duration", "0s", "--image-gc-period", "2s")
		a.restart()
		polltest.Until(t, 30*time.Second, probe+" removed", func() (bool, string) {
			return a.removedImage(probe) && !imagePresent(t, rt, probe), a.logLineWith("Removed unused image")
		})
		// Two more passes: nothing else goes while the pod runs.
		polltest.Until(t, 30*time.Second, "two more passes", func() (bool, string) {
			n := a.countLogLines("Image filesystem usage is over the high threshold")
			return n >= 3, fmt.Sprintf("%d passes", n)
		})
		for _, ref := range []string{pause, busybox} {
			if !imagePresent(t, rt, ref) {
				t.Errorf("%s was removed while the pod runs", ref)
			}
		}
		after := containerStatus(a.waitRunning("keep", 10*time.Second), "main")
		if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
			t.Errorf("the pod's container changed: %s (restarts %d), was %s", after.ContainerID, after.RestartCount, before.ContainerID)
		}
		// A pass that cannot free enough says so.
		if line := a.logLineWith("Image garbage collection failed"); !strings.Contains(line, "bytes wanted") {
			t.Errorf("no pass reported that it freed less than it wanted: %q", line)
		}

		// The pod goes; so does its image, at a later pass.
		a.removeManifest("keep.yaml")
		// The log line comes once RemoveImage returns, which on containerd
		// 1.6 is after CRI stops showing the image (it collects the
		// image's content first).
		polltest.Until(t, 60*time.Second, busybox+" removed once its pod is gone", func() (bool, string) {
			return a.removedImage(busybox) && !imagePresent(t, rt, busybox), a.logLineWith("Removed unused image")
		})
		// A pass that started after that one ended keeps the sandbox image
		// too, though no pod uses it now.
		passes := a.countLogLines("Image filesystem usage is over the high threshold")
		polltest.Until(t, 30*time.Second, "two more passes", func() (bool, string) {
			n := a.countLogLines("Image filesystem usage is over the high threshold")
			return n >= passes+2, fmt.Sprintf("%d passes", n-passes)
		})
		if !imagePresent(t, rt, pause) {
			t.Errorf("the sandbox image %s was removed", pause)
		}
		// Every removal counts (the bed may hold more images than these).
		removed := a.countLogLines("Removed unused image")
		body, _, err := a.get(a.port, "/metrics")
		if want := fmt.Sprintf(`kubelet_image_garbage_collected_total{reason="space"} %d`, removed); err != nil || removed < 2 || !strings.Contains(body, want) {
			t.Errorf("/metrics: want %q (at least 2); err %v; got %s", want, err, grepLines(body, "image_garbage"))
		}
	})
}

// Archives in <root-dir>/images before the start are imported: an OCI
// layout, a docker-save tarball and a gzipped one of plain layers run as a
// pod's images with imagePullPolicy Never; a broken archive is named in
// the log and does not stop the agent; containerd's garbage collector
// keeps all they hold; a restart imports nothing again; and containerd's
// own importer (ctr) makes the same images of them.
func TestImageImport(t *testing.T) {
	forEachPrivateRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd, bed *ctrdtest.Bed) {
		busybox, err := bed.Image(ctrdtest.RoleBusybox)
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		// After the agent's cleanup, before the directory goes.
		t.Cleanup(func() { unmountUnder(t, root) })
		dir := filepath.Join(root, "images")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		const (
			ociRef    = "localhost/minikubelet/airgap-oci:1"
			dockerRef = "localhost/minikubelet/airgap-docker:1"
			plainRef  = "localhost/minikubelet/airgap-docker-plain:1"
		)
		refs := []string{ociRef, dockerRef, plainRef}
		writeRenamedOCI(t, busybox.Tar, ociRef, filepath.Join(dir, "oci.tar"))
		writeDockerSave(t, busybox.Tar, dockerRef, filepath.Join(dir, "docker.tar"))
		plain := filepath.Join(root, "docker-plain.tar")
		writeDockerSavePlain(t, busybox.Tar, plainRef, plain, filepath.Join(dir, "docker-gz.tar"))
		if err := os.WriteFile(filepath.Join(dir, "broken.tar"), []byte("this is no tarball"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
			if imagePresent(t, rt, ref) {
				t.Fatalf("%s is in the runtime before the agent starts", ref)
			}
		}

		// The pod is there before the agent starts, so that its first sync
		// shows whether the images were imported before it.
		manifests := filepath.Join(root, "manifests")
		if err := os.MkdirAll(manifests, 0o755); err != nil {
			t.Fatal(err)
		}
		pod := fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: airgap
spec:
  containers:
  - name: oci
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
  - name: docker
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
  - name: plain
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`, ociRef, dockerRef, plainRef)
		if err := os.WriteFile(filepath.Join(manifests, "airgap.yaml"), []byte(pod), 0o644); err != nil {
			t.Fatal(err)
		}

		a := startAgentWith(t, rt, agentOptions{args: []string{"--root-dir", root, "--pod-manifest-path", manifests}})
		a.waitRunning("airgap", 60*time.Second)
		if line := a.logLineWith("is not present with pull policy of Never"); line != "" {
			t.Errorf("a sync ran before the import: %s", line)
		}
		broken := a.logLineWith("Image archive not imported")
		if !strings.Contains(broken, filepath.Join(dir, "broken.tar")) {
			t.Errorf("the broken archive is not named in the log: %q", broken)
		}
		if n := a.countLogLines("Imported image archive"); n != 3 {
			t.Errorf("%d archives imported, want 3", n)
		}

		// The import's lease is gone: the labels alone keep every blob and
		// snapshot of the images from containerd's garbage collector.
		collectGarbage(t, rt, bed)
		ready := strings.Fields(ctr(t, rt, bed, "images", "check", "-q"))
		for _, ref := range refs {
			if !slices.Contains(ready, ref) {
				t.Errorf("after garbage collection, ctr images check does not find %s complete and unpacked: %v", ref, ready)
			}
		}

		a.stop()
		a.restart()
		polltest.Until(t, 30*time.Second, "every archive skipped after the restart", func() (bool, string) {
			n := a.countLogLines("Image archive already imported")
			return n == 3, fmt.Sprintf("%d skipped", n)
		})
		if n := a.countLogLines("Imported image archive"); n != 3 {
			t.Errorf("%d imports after the restart, want the 3 of the first start", n)
		}
		a.waitRunning("airgap", 30*time.Second)

		// containerd's own importer makes the same images of the archives,
		// manifests and all: the same targets.
		ours := importedTargets(t, root)
		for _, f := range []string{filepath.Join(dir, "oci.tar"), filepath.Join(dir, "docker.tar"), plain} {
			ctr(t, rt, bed, "images", "import", f)
		}
		theirs := ctrImageTargets(t, rt, bed)
		for _, ref := range refs {
			if ours[ref] == "" || ours[ref] != theirs[ref] {
				t.Errorf("%s: the agent imported target %q, ctr %q", ref, ours[ref], theirs[ref])
			}
		}
	})
}

// forEachPrivateRuntime runs f as a parallel subtest per runtime of the
// bed, each against a containerd of its own, stopped at the subtest's end.
func forEachPrivateRuntime(t *testing.T, f func(t *testing.T, rt *ctrdtest.Containerd, bed *ctrdtest.Bed)) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	bed, err := ctrdtest.LoadBed(os.Getenv("MINIKUBELET_BED"))
	if err != nil {
		t.Fatal(err)
	}
	base := os.Getenv("MINIKUBELET_BED_BASE")
	for _, r := range bed.Runtimes {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel()
			dir := base
			if dir == "" {
				dir = t.TempDir()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rt, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: r, Bed: bed, BaseDir: dir})
			if err != nil {
				t.Fatalf("start a private %s: %v", r.Name, err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := rt.Stop(ctx); err != nil {
					t.Errorf("stop the private %s: %v", r.Name, err)
				}
			})
			f(t, rt, bed)
		})
	}
}

// removedImage reports whether the agent logged removing ref.
func (a *agent) removedImage(ref string) bool {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "Removed unused image") && strings.Contains(line, fmt.Sprintf("%q", ref)) {
			return true
		}
	}
	return false
}

func bedRef(t *testing.T, bed *ctrdtest.Bed, role string) string {
	t.Helper()
	im, err := bed.Image(role)
	if err != nil {
		t.Fatal(err)
	}
	return im.Ref
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// readTarFiles returns the regular files of a tarball by name, and their
// order.
func readTarFiles(t *testing.T, path string) (map[string][]byte, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, order := map[string][]byte{}, []string{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = data
		order = append(order, hdr.Name)
	}
	return files, order
}

func writeTarFiles(t *testing.T, path string, files map[string][]byte, order []string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range order {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeRenamedOCI copies the single-image OCI layout tarball src to dst,
// naming its image ref.
func writeRenamedOCI(t *testing.T, src, ref, dst string) {
	t.Helper()
	files, order := readTarFiles(t, src)
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json of %s: %v (%d manifests)", src, err, len(idx.Manifests))
	}
	idx.Manifests[0].Annotations = map[string]string{"io.containerd.image.name": ref}
	data, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	files["index.json"] = data
	writeTarFiles(t, dst, files, order)
}

// writeDockerSave writes the image of the OCI layout tarball src as docker
// save does, tagged ref: manifest.json, <config>.json, <layer>/layer.tar.
func writeDockerSave(t *testing.T, src, ref, dst string) {
	t.Helper()
	files, _ := readTarFiles(t, src)
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json of %s: %v", src, err)
	}
	blob := func(d string) []byte {
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")]
		if !ok {
			t.Fatalf("%s: no blob %s", src, d)
		}
		return data
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(blob(idx.Manifests[0].Digest.String()), &m); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	config := m.Config.Digest.Encoded() + ".json"
	out[config] = blob(m.Config.Digest.String())
	var layers []string
	for _, l := range m.Layers {
		name := l.Digest.Encoded() + "/layer.tar"
		out[name] = blob(l.Digest.String())
		layers = append(layers, name)
	}
	manifest, err := json.Marshal([]map[string]any{{"Config": config, "RepoTags": []string{ref}, "Layers": layers}})
	if err != nil {
		t.Fatal(err)
	}
	out["manifest.json"] = manifest
	order := append([]string{"manifest.json", config}, layers...)
	writeTarFiles(t, dst, out, order)
}
