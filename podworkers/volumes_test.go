package podworkers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/volumes"
)

// withVolumes gives the fixture's syncer a volume manager over its root
// directory.
func withVolumes(f *syncerFixture) *volumes.Manager {
	m := volumes.New(volumes.Config{RootDir: f.root, Clock: f.clock})
	f.s.cfg.Volumes = m
	return m
}

func withVolume(vol v1.Volume, mounts ...v1.VolumeMount) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, vol)
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, mounts...)
	}
}

// A volume that cannot be set up holds the whole pod back: no sandbox, no
// container, and each container waits in ContainerCreating with a message
// naming the volume. Once the volume can be set up, the pod starts.
func TestSyncPodWaitsForVolumes(t *testing.T) {
	f := newSyncer(t)
	withVolumes(f)
	f.img.SetFakeImages([]string{"img-app"})
	hostDir := filepath.Join(t.TempDir(), "later")
	dirType := v1.HostPathDirectory
	pod := newPod("web", []string{"app"}, withVolume(
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &dirType}}},
		v1.VolumeMount{Name: "data", MountPath: "/data"},
	))
	_, err := f.sync(t, pod)
	want := `volume "data": hostPath type Directory: ` + hostDir + ` does not exist`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SyncPod = %v, want an error saying %s", err, want)
	}
	if changes := f.changes(); len(changes) != 0 {
		t.Errorf("runtime changes %v with a volume missing", changes)
	}
	w := f.status.last(t).waiting["app"]
	if w.Reason != "ContainerCreating" || !strings.Contains(w.Message, want) {
		t.Errorf("waiting = %+v, want ContainerCreating saying %s", w, want)
	}

	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.mustSync(t, pod)
	f.rt.mu.Lock()
	created := slices.Clone(f.rt.created)
	f.rt.mu.Unlock()
	if len(created) != 1 {
		t.Fatalf("%d containers created, want 1", len(created))
	}
	m := created[0].Mounts
	if len(m) == 0 || m[0].ContainerPath != "/data" || m[0].HostPath != hostDir {
		t.Errorf("mounts = %v, want /data from %s first", m, hostDir)
	}
}

// Volume mounts reach the container config; one that cannot be made is a
// CreateContainerConfigError of that container only.
func TestSyncPodMountsVolumes(t *testing.T) {
	f := newSyncer(t)
	withVolumes(f)
	f.img.SetFakeImages([]string{"img-app", "img-bad"})
	bidi := v1.MountPropagationBidirectional
	pod := newPod("web", []string{"app", "bad"}, withVolume(
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.VolumeMount{Name: "cache", MountPath: "/cache", ReadOnly: true},
	))
	pod.Spec.Containers[1].VolumeMounts = []v1.VolumeMount{{Name: "cache", MountPath: "/c", MountPropagation: &bidi}}
	_, err := f.sync(t, pod)
	if err == nil || !strings.Contains(err.Error(), "Bidirectional is only allowed in privileged containers") {
		t.Fatalf("SyncPod = %v, want the bad container's mount error", err)
	}
	w := f.status.last(t).waiting["bad"]
	if w.Reason != "CreateContainerConfigError" || !strings.Contains(w.Message, `container "bad": volumeMount "cache" at /c`) {
		t.Errorf("bad's waiting = %+v", w)
	}
	f.rt.mu.Lock()
	created := slices.Clone(f.rt.created)
	f.rt.mu.Unlock()
	if len(created) != 1 || created[0].Metadata.Name != "app" {
		t.Fatalf("created %v, want app only", created)
	}
	wantHost := filepath.Join(f.root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "cache")
	m := created[0].Mounts[0]
	if m.ContainerPath != "/cache" || m.HostPath != wantHost || !m.Readonly {
		t.Errorf("app's first mount = %v, want /cache from %s read-only", m, wantHost)
	}
}

// The terminated pod's directory goes through the volume manager.
func TestSyncTerminatedPodTearsDownVolumes(t *testing.T) {
	f := newSyncer(t)
	withVolumes(f)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"}, withVolume(
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.VolumeMount{Name: "cache", MountPath: "/cache"},
	))
	f.mustSync(t, pod)
	podDir := filepath.Join(f.root, "pods", string(pod.UID))
	if !exists(filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "cache")) {
		t.Fatal("no emptyDir after the sync")
	}
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatingPod(f.ctx, pod, f.cached(t, pod), 1); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); err != nil {
		t.Fatal(err)
	}
	if exists(podDir) {
		t.Errorf("%s left", podDir)
	}
}
