package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The disk pressure test's filesystem: a tmpfs holding the private
// containerd's root and the agent's root dir (one filesystem, as on a
// node whose image filesystem is its root's), and the size of the unused
// image that fills part of it.
const (
	diskPressureFsMiB = 256
	bigImageMiB       = 40
)

// writeBigImage writes a docker-save tarball of an image tagged ref whose
// one layer holds mib MiB of random bytes (which no compression shrinks).
func writeBigImage(t *testing.T, ref, path string, mib int) {
	t.Helper()
	data := make([]byte, mib<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layerSum := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Cmd": []string{"/big"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(layerSum[:])}},
	})
	if err != nil {
		t.Fatal(err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	if err != nil {
		t.Fatal(err)
	}
	writeTarFiles(t, path, map[string][]byte{"manifest.json": manifest, configName: config, layerName: layer.Bytes()}, []string{"manifest.json", configName, layerName})
}

// statfsAvailable is what unprivileged users may still write on the
// filesystem of dir, as nodefs.available counts it.
func statfsAvailable(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fillerPod writes 4MiB into its emptyDir every 200ms, without end.
func fillerPod(name string) string {
	return evictionPod(name, "", 1, "writer", `    command: ["sh", "-c", "i=0; while true; do dd if=/dev/zero of=/scratch/f$i bs=1M count=4 2>/dev/null; i=$((i+1)); sleep 0.2; done"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    emptyDir: {}
`)
}

// Disk pressure on a node whose images share the root dir's filesystem (a
// small tmpfs holding a private containerd and the agent's root dir), with
// nodefs.available's threshold set just above what is free: the agent
// first removes the unused images, which is enough, and evicts nothing;
// then a pod filling its emptyDir crosses the threshold again, nothing is
// left to reclaim, and that pod is evicted with the kubelet's message
// before the filesystem is full, while the pod beside it runs on.
func TestEvictionDiskPressure(t *testing.T) {
	// Beside the other eviction tests (each has its own pods cgroup,
	// filesystem or pid limit), at the end of the suite.
	t.Parallel()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	for _, r := range env.bed.Runtimes {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel()
			fs, err := os.MkdirTemp("", "mkevd")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(fs) })
			if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0755", diskPressureFsMiB)); err != nil {
				t.Fatalf("mount a tmpfs at %s: %v", fs, err)
			}
			t.Cleanup(func() {
				if err := syscall.Unmount(fs, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					t.Errorf("cleanup: unmount %s: %v", fs, err)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rt, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: r, Bed: env.bed, BaseDir: fs})
			if err != nil {
				t.Fatalf("start a private %s on a tmpfs: %v", r.Name, err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := rt.Stop(ctx); err != nil {
					t.Errorf("stop the private %s: %v", r.Name, err)
				}
			})

			// No disk threshold yet: a pod runs, and an image no pod
			// uses takes part of the filesystem.
			root := filepath.Join(fs, "root")
			a := startAgent(t, rt, "--root-dir", root, "--eviction-hard", "memory.available<100Mi", "--eviction-monitoring-period", "1s",
				"--eviction-pressure-transition-period", "2s", "--minimum-image-ttl-duration", "0s", "--image-gc-high-threshold", "100")
			a.writeManifest("keep.yaml", guaranteedPod("keep", ""))
			keep := containerStatus(a.waitRunning("keep", time.Minute), "main").ContainerID
			const big = "localhost/minikubelet/big:1"
			tarball := filepath.Join(t.TempDir(), "big.tar")
			writeBigImage(t, big, tarball, bigImageMiB)
			cmd := exec.CommandContext(ctx, r.Ctr, "--address", rt.Socket(), "--namespace", "k8s.io", "images", "import", tarball)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("import %s: %v: %s", big, err, out)
			}
			if !imagePresent(t, rt, big) {
				t.Fatalf("%s not in the runtime after its import", big)
			}

			// The threshold above what is free now: met at once.
			avail := statfsAvailable(t, fs)
			threshold := avail + 16<<20
			a.stop()
			a.args = append(a.args, "--eviction-hard", fmt.Sprintf("nodefs.available<%d", threshold))
			a.restart()
			polltest.Until(t, time.Minute, "the unused image removed to reclaim disk", func() (bool, string) {
				return !imagePresent(t, rt, big) && a.logContains("Reclaimed enough without evicting a pod"), a.logLineWith("Eviction threshold met")
			})
			t.Logf("free: %d MiB with the image, %d MiB after; threshold %d MiB", avail>>20, statfsAvailable(t, fs)>>20, threshold>>20)
			if a.logContains("Evicting pod") {
				t.Errorf("a pod was evicted though removing the image was enough: %s", a.logLineWith("Evicting pod"))
			}

			// A pod fills the filesystem: evicted before it is full.
			var low atomic.Int64
			low.Store(statfsAvailable(t, fs))
			stop := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					var st syscall.Statfs_t
					if syscall.Statfs(fs, &st) == nil {
						if v := int64(st.Bavail) * st.Bsize; v < low.Load() {
							low.Store(v)
						}
					}
				}
			}()
			// Within the transition period of the first pressure the node
			// refuses the filler; being a static pod, it starts once the
			// node admits it.
			a.writeManifest("filler.yaml", fillerPod("filler"))
			var filler *v1.Pod
			polltest.Until(t, 2*time.Minute, "the filler evicted", func() (bool, string) {
				filler = a.pod("filler")
				if filler == nil {
					return false, "not on /pods"
				}
				return filler.Status.Phase == v1.PodFailed && strings.HasPrefix(filler.Status.Message, "The node was low on resource: "), describe(filler) + " " + filler.Status.Message
			})
			a.removeManifest("filler.yaml")
			close(stop)
			<-watched
			t.Logf("lowest free space while the filler wrote: %d MiB; %s", low.Load()>>20, filler.Status.Message)
			if filler.Status.Reason != "Evicted" || !strings.HasPrefix(filler.Status.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: ") {
				t.Errorf("the filler's status: %s %q", filler.Status.Reason, filler.Status.Message)
			}
			if low.Load() <= 0 {
				t.Error("the filesystem filled up: the filler took the last free space")
			}
			if c := containerStatus(a.pod("keep"), "main"); c == nil || c.State.Running == nil || c.ContainerID != keep {
				t.Errorf("the pod beside it: %+v", c)
			}
			if v, ok := a.metric("kubelet_evictions", `{eviction_signal="nodefs.available"}`); !ok || v != 1 {
				t.Errorf(`kubelet_evictions{eviction_signal="nodefs.available"} = %v (%v), want 1`, v, ok)
			}
		})
	}
}
