package volumes

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func imageVolume(name, ref string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref, PullPolicy: v1.PullIfNotPresent}}}
}

// An image volume is mounted by the runtime from the image: no host path,
// read-only whatever the volumeMount says, of a subPath only where the
// runtime can; nothing is made on the host.
func TestImageVolumeMounts(t *testing.T) {
	full := ImageVolumeSupport{Mount: true, SubPath: true, Runtime: "containerd v2.2.0"}
	noSub := ImageVolumeSupport{Mount: true, Runtime: "containerd v2.1.4"}
	tests := []struct {
		name    string
		support ImageVolumeSupport
		mount   v1.VolumeMount
		env     map[string]string
		want    *runtimeapi.Mount
		wantErr string
	}{
		{
			name:    "whole image",
			support: noSub,
			mount:   v1.VolumeMount{Name: "img", MountPath: "/img"},
			want:    &runtimeapi.Mount{ContainerPath: "/img", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "example.com/data:1", UserSpecifiedImage: "example.com/data:1"}},
		},
		{
			name:    "subPath",
			support: full,
			mount:   v1.VolumeMount{Name: "img", MountPath: "/etc/app", SubPath: "etc/app"},
			want:    &runtimeapi.Mount{ContainerPath: "/etc/app", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "example.com/data:1", UserSpecifiedImage: "example.com/data:1"}, ImageSubPath: "etc/app"},
		},
		{
			name:    "subPathExpr",
			support: full,
			mount:   v1.VolumeMount{Name: "img", MountPath: "/etc/app", SubPathExpr: "$(FLAVOUR)/conf"},
			env:     map[string]string{"FLAVOUR": "prod"},
			want:    &runtimeapi.Mount{ContainerPath: "/etc/app", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "example.com/data:1", UserSpecifiedImage: "example.com/data:1"}, ImageSubPath: "prod/conf"},
		},
		{
			name:    "subPath the runtime cannot honour",
			support: noSub,
			mount:   v1.VolumeMount{Name: "img", MountPath: "/etc/app", SubPath: "etc/app"},
			wantErr: `container "main": volumeMount "img" at /etc/app: subPath "etc/app" of an image volume needs a container runtime that mounts part of an image (containerd 2.2 or later, CRI-O 1.33 or later); this node's containerd v2.1.4 would mount the whole image`,
		},
		{
			name:    "subPath leaving the image",
			support: full,
			mount:   v1.VolumeMount{Name: "img", MountPath: "/x", SubPath: "../etc"},
			wantErr: `must not contain '..'`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			m := newTestManager(t, Config{RootDir: root, ImageVolumes: tt.support})
			pod := testPod("uid", []v1.Volume{imageVolume("img", "example.com/data:1")})
			pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{tt.mount}
			pv, err := m.SetUpPod(testCtx(t), pod)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := pv.HostPath("img"); !ok || p != "" {
				t.Errorf("HostPath(img) = %q, %v; want no host path", p, ok)
			}
			got, err := pv.Mounts(testCtx(t), &pod.Spec.Containers[0], tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Errorf("mounts %v, want %v", got, tt.want)
			}
			if n := len(mountsUnder(t, root)); n != 0 {
				t.Errorf("%d mounts under the root dir, want none", n)
			}
		})
	}
}

func TestImageVolumeRefused(t *testing.T) {
	tests := []struct {
		name    string
		support ImageVolumeSupport
		vol     v1.Volume
		want    string
	}{
		{"a runtime that cannot mount images", ImageVolumeSupport{Runtime: "containerd 1.6.20~ds1"}, imageVolume("img", "example.com/data:1"),
			`volume "img": image volumes need a container runtime that mounts images through CRI (containerd 2.1 or later, CRI-O 1.31 or later); this node's containerd 1.6.20~ds1 does not, and the pod does not run without the volume`},
		{"no reference", ImageVolumeSupport{Mount: true}, imageVolume("img", ""), `volume "img": image: reference is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, Config{ImageVolumes: tt.support})
			_, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{tt.vol}))
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestResolveImageMounts(t *testing.T) {
	mounts := []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/host/data"},
		{ContainerPath: "/img", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "example.com/data:1", UserSpecifiedImage: "example.com/data:1"}},
	}
	if err := ResolveImageMounts(mounts, map[string]string{"example.com/data:1": "sha256:abc"}); err != nil {
		t.Fatal(err)
	}
	if got := mounts[1].Image; got.Image != "sha256:abc" || got.UserSpecifiedImage != "example.com/data:1" {
		t.Errorf("image mount %v, want sha256:abc as example.com/data:1", got)
	}
	if mounts[0].Image != nil {
		t.Errorf("host mount got an image: %v", mounts[0])
	}
	err := ResolveImageMounts([]*runtimeapi.Mount{{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{UserSpecifiedImage: "other:2"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), `image volume at /img: image "other:2" was not pulled`) {
		t.Errorf("err = %v", err)
	}
}
