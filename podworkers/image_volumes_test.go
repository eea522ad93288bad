package podworkers

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/volumes"
)

func withImageVolumes(f *syncerFixture, support volumes.ImageVolumeSupport) {
	f.s.cfg.Volumes = volumes.New(volumes.Config{RootDir: f.root, Clock: f.clock, ImageVolumes: support})
}

// createdConfigs returns the configs of the containers created so far.
func (f *syncerFixture) createdConfigs() []*runtimeapi.ContainerConfig {
	f.rt.mu.Lock()
	defer f.rt.mu.Unlock()
	return slices.Clone(f.rt.created)
}

func imageVol(name, ref string, policy v1.PullPolicy) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}}
}

// An image volume's image is ensured under its pullPolicy (events about
// the pod), and the container's mount names the image the runtime has,
// read-only, with its subPath.
func TestSyncPodImageVolume(t *testing.T) {
	f := newSyncer(t)
	withImageVolumes(f, volumes.ImageVolumeSupport{Mount: true, SubPath: true, Runtime: "containerd v2.2.0"})
	f.img.SetFakeImages([]string{"img-app", "example.com/data:1"})
	f.img.Lock()
	f.img.Images["example.com/data:1"].Id = "sha256:data"
	f.img.Unlock()
	pod := newPod("web", []string{"app"},
		withVolume(imageVol("data", "example.com/data:1", v1.PullIfNotPresent),
			v1.VolumeMount{Name: "data", MountPath: "/data"},
			v1.VolumeMount{Name: "data", MountPath: "/etc/app", SubPath: "etc/app"}),
		withVolume(imageVol("fresh", "example.com/fresh:2", v1.PullAlways), v1.VolumeMount{Name: "fresh", MountPath: "/fresh"}))
	f.mustSync(t, pod)

	created := f.createdConfigs()
	if len(created) != 1 {
		t.Fatalf("%d containers created, want 1", len(created))
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/data", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "sha256:data", UserSpecifiedImage: "example.com/data:1"}},
		{ContainerPath: "/etc/app", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "sha256:data", UserSpecifiedImage: "example.com/data:1"}, ImageSubPath: "etc/app"},
		{ContainerPath: "/fresh", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "example.com/fresh:2", UserSpecifiedImage: "example.com/fresh:2"}},
	}
	got := created[0].Mounts[:len(want)]
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Errorf("mount %d = %v\nwant %v", i, got[i], want[i])
		}
	}
	pulls := 0
	for _, c := range f.imageCalls() {
		if c == "PullImage" {
			pulls++
		}
	}
	f.img.Lock()
	_, fresh := f.img.Images["example.com/fresh:2"]
	f.img.Unlock()
	if pulls != 1 || !fresh {
		t.Errorf("%d pulls (fresh pulled: %v), want the Always volume's image only", pulls, fresh)
	}
	var podEvents []string
	for _, e := range f.events.take() {
		if strings.Contains(e, "example.com/") {
			podEvents = append(podEvents, e)
		}
	}
	for _, want := range []string{
		`Normal Pulled : Container image "example.com/data:1" already present on machine`,
		`Normal Pulling : Pulling image "example.com/fresh:2"`,
	} {
		if !slices.ContainsFunc(podEvents, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("no event %q about the pod in %q", want, podEvents)
		}
	}
}

// A container whose image volume cannot be had waits with that pull's
// reason and a message naming the volume; the others start.
func TestSyncPodImageVolumeMissing(t *testing.T) {
	f := newSyncer(t)
	withImageVolumes(f, volumes.ImageVolumeSupport{Mount: true})
	f.img.SetFakeImages([]string{"img-app", "img-other"})
	pod := newPod("web", []string{"app", "other"},
		withVolume(imageVol("data", "example.com/data:1", v1.PullNever), v1.VolumeMount{Name: "data", MountPath: "/data"}))
	_, err := f.sync(t, pod)
	if err == nil || !strings.Contains(err.Error(), `image volume "data"`) {
		t.Fatalf("SyncPod = %v, want the volume's error", err)
	}
	w := f.status.last(t).waiting["app"]
	if w.Reason != reasonErrImageNeverPull || w.Message != `image volume "data": Container image "example.com/data:1" is not present with pull policy of Never` {
		t.Errorf("app waits %+v", w)
	}
	created := f.createdConfigs()
	if len(created) != 1 || created[0].Metadata.Name != "other" {
		t.Errorf("created %v, want other only", created)
	}
}

// On a runtime that cannot mount images the pod starts nothing: its
// containers wait in ContainerCreating with a message naming the volume.
func TestSyncPodImageVolumeRefused(t *testing.T) {
	f := newSyncer(t)
	withImageVolumes(f, volumes.ImageVolumeSupport{Runtime: "containerd 1.6.20~ds1"})
	f.img.SetFakeImages([]string{"img-app", "example.com/data:1"})
	pod := newPod("web", []string{"app"},
		withVolume(imageVol("data", "example.com/data:1", v1.PullIfNotPresent), v1.VolumeMount{Name: "data", MountPath: "/data"}))
	_, err := f.sync(t, pod)
	want := `volume "data": image volumes need a container runtime that mounts images through CRI (containerd 2.1 or later, CRI-O 1.31 or later); this node's containerd 1.6.20~ds1 does not`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SyncPod = %v, want %s", err, want)
	}
	if w := f.status.last(t).waiting["app"]; w.Reason != "ContainerCreating" || !strings.Contains(w.Message, want) {
		t.Errorf("app waits %+v", w)
	}
	if changes := f.changes(); len(changes) != 0 {
		t.Errorf("runtime changes %v", changes)
	}
}
