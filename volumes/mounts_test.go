package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// CRI mounts from volumeMounts: paths, readOnly and propagation.
func TestMounts(t *testing.T) {
	hostDir := t.TempDir()
	m := newTestManager(t, Config{})
	pod := testPod("uid-m", []v1.Volume{emptyDirVolume("cache", ""), hostPathVolume("host", hostDir, v1.HostPathDirectory)})
	pv, err := m.SetUpPod(testCtx(t), pod)
	if err != nil {
		t.Fatal(err)
	}
	cache, _ := pv.HostPath("cache")
	prop := func(p v1.MountPropagationMode) *v1.MountPropagationMode { return &p }
	privileged := &v1.SecurityContext{Privileged: ptr.To(true)}
	tests := []struct {
		name string
		vm   v1.VolumeMount
		sc   *v1.SecurityContext
		want *runtimeapi.Mount
		err  string
	}{
		{name: "emptyDir", vm: v1.VolumeMount{Name: "cache", MountPath: "/cache"},
			want: &runtimeapi.Mount{ContainerPath: "/cache", HostPath: cache, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}},
		{name: "readOnly", vm: v1.VolumeMount{Name: "host", MountPath: "/h", ReadOnly: true},
			want: &runtimeapi.Mount{ContainerPath: "/h", HostPath: hostDir, Readonly: true}},
		{name: "None is private", vm: v1.VolumeMount{Name: "host", MountPath: "/h", MountPropagation: prop(v1.MountPropagationNone)},
			want: &runtimeapi.Mount{ContainerPath: "/h", HostPath: hostDir, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}},
		{name: "HostToContainer", vm: v1.VolumeMount{Name: "host", MountPath: "/h", MountPropagation: prop(v1.MountPropagationHostToContainer)},
			want: &runtimeapi.Mount{ContainerPath: "/h", HostPath: hostDir, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}},
		{name: "Bidirectional in a privileged container", sc: privileged, vm: v1.VolumeMount{Name: "host", MountPath: "/h", MountPropagation: prop(v1.MountPropagationBidirectional)},
			want: &runtimeapi.Mount{ContainerPath: "/h", HostPath: hostDir, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}},
		{name: "Bidirectional in an unprivileged container", vm: v1.VolumeMount{Name: "host", MountPath: "/h", MountPropagation: prop(v1.MountPropagationBidirectional)},
			err: `container "c": volumeMount "host" at /h: mountPropagation Bidirectional is only allowed in privileged containers`},
		{name: "unknown propagation", vm: v1.VolumeMount{Name: "host", MountPath: "/h", MountPropagation: prop("Sideways")},
			err: `mountPropagation "Sideways" is not supported`},
		{name: "recursiveReadOnly Enabled", vm: v1.VolumeMount{Name: "host", MountPath: "/h", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)},
			want: &runtimeapi.Mount{ContainerPath: "/h", HostPath: hostDir, Readonly: true, RecursiveReadOnly: true}},
		{name: "unknown volume", vm: v1.VolumeMount{Name: "ghost", MountPath: "/g"},
			err: `container "c": volumeMount "ghost" at /g: the pod has no volume "ghost"`},
		{name: "absolute subPath", vm: v1.VolumeMount{Name: "cache", MountPath: "/x", SubPath: "/etc"},
			err: `container "c": volumeMount "cache" at /x: subPath "/etc" must be a relative path`},
		{name: "subPath with ..", vm: v1.VolumeMount{Name: "cache", MountPath: "/x", SubPath: "a/../../etc"},
			err: `container "c": volumeMount "cache" at /x: subPath "a/../../etc" must not contain '..'`},
		{name: "subPathExpr with ..", vm: v1.VolumeMount{Name: "cache", MountPath: "/x", SubPathExpr: "$(UP)/etc"},
			err: `subPath "../etc" must not contain '..'`},
		{name: "subPathExpr with an unset variable", vm: v1.VolumeMount{Name: "cache", MountPath: "/x", SubPathExpr: "logs/$(NOPE)/$(EMPTY)"},
			err: `subPathExpr "logs/$(NOPE)/$(EMPTY)": no value for $(EMPTY), $(NOPE) in the container's env`},
	}
	env := map[string]string{"UP": "..", "EMPTY": ""}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1.Container{Name: "c", SecurityContext: tt.sc, VolumeMounts: []v1.VolumeMount{tt.vm}}
			got, err := pv.Mounts(testCtx(t), c, env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].String() != tt.want.String() {
				t.Errorf("mounts = %v, want [%v]", got, tt.want)
			}
		})
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"POD_NAME": "web-0", "NS": "prod"}
	tests := []struct{ expr, want string }{
		{"$(POD_NAME)", "web-0"},
		{"logs/$(NS)/$(POD_NAME)", "logs/prod/web-0"},
		{"cost$$", "cost$"},
		{"$$(POD_NAME)", "$(POD_NAME)"},
		{"a$b", "a$b"},
		{"open$(", "open$("},
	}
	for _, tt := range tests {
		got, err := expandSubPathExpr(tt.expr, env)
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

// subPath mounts: resolved inside the volume, created when missing,
// bind-mounted under volume-subpaths, and refused when they would leave
// the volume.
func TestSubPath(t *testing.T) {
	requireRoot(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, Config{})
	pod := testPod("uid-sub", []v1.Volume{emptyDirVolume("data", "")})
	ctx := testCtx(t)
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	vol, _ := pv.HostPath("data")
	// What a container could have made in its volume.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(vol, "real/dir"), 0o755))
	must(os.WriteFile(filepath.Join(vol, "real/file"), []byte("in volume"), 0o644))
	must(os.Symlink("real", filepath.Join(vol, "inner")))                        // stays inside
	must(os.Symlink(filepath.Join(vol, "real"), filepath.Join(vol, "absinner"))) // absolute, inside
	must(os.Symlink(outside, filepath.Join(vol, "abs")))                         // absolute, outside
	must(os.Symlink("../../../../..", filepath.Join(vol, "up")))                 // relative, outside
	must(os.Symlink("../x", filepath.Join(vol, "real/up1")))                     // inside: real/../x
	must(os.Symlink("real/dir/../../up", filepath.Join(vol, "chain")))           // through another link, outside
	must(os.Symlink("loop", filepath.Join(vol, "loop")))

	tests := []struct {
		name string
		sub  string
		// read is a file to read through the mount, and what it holds.
		read, content string
		err           string
	}{
		{name: "a directory", sub: "real", read: "file", content: "in volume"},
		{name: "a file", sub: "real/file", content: "in volume"},
		{name: "through a symlink inside", sub: "inner/dir"},
		{name: "through an absolute symlink into the volume", sub: "absinner", read: "file", content: "in volume"},
		{name: "missing directories are created", sub: "new/deep/dir"},
		{name: "a relative symlink with .. that stays inside", sub: "real/up1"},
		{name: "an absolute symlink out", sub: "abs/secret",
			err: `container "main": volumeMount "data" at /mnt: subPath "abs/secret": leads out of the volume through symlink "abs" -> "` + outside + `"`},
		{name: "a relative symlink out", sub: "up/etc",
			err: `subPath "up/etc": leads out of the volume through symlink "up" -> "../../../../.."`},
		{name: "a chain of symlinks out", sub: "chain",
			err: `leads out of the volume through symlink`},
		{name: "a symlink loop", sub: "loop/x",
			err: `too many levels of symlinks at "loop"`},
		{name: "through a file", sub: "real/file/x",
			err: `"real/file" is not a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every case uses the same mount point, bound again each time.
			c := &v1.Container{Name: "main", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/mnt", SubPath: tt.sub}}}
			got, err := pv.Mounts(ctx, c, nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v\nwant %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(m.PodDir("uid-sub"), "volume-subpaths", "data", "main", "0")
			if got[0].HostPath != target {
				t.Errorf("host path %s, want %s", got[0].HostPath, target)
			}
			if n, _ := mountsAt(t, target); n != 1 {
				t.Errorf("%d mounts at %s, want 1", n, target)
			}
			if tt.content != "" {
				if got := readVolumeFile(t, target, tt.read); got != tt.content {
					t.Errorf("read %q through the mount: %q, want %q", tt.read, got, tt.content)
				}
			}
			// A second call (a restarted container) reuses the mount.
			if _, err := pv.Mounts(ctx, c, nil); err != nil {
				t.Fatal(err)
			}
			if n, _ := mountsAt(t, target); n != 1 {
				t.Errorf("%d mounts at %s after a second call, want 1", n, target)
			}
		})
	}
	// Created directories have the volume root's mode.
	fi, err := os.Stat(filepath.Join(vol, "new/deep"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Errorf("created subPath directory mode %v, want the volume's 0777", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "host secret" {
		t.Errorf("the host file changed: %q", b)
	}
}

// A subPath whose target changed is mounted again at the same point.
func TestSubPathRebinds(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, Config{})
	pod := testPod("uid-re", []v1.Volume{emptyDirVolume("data", "")})
	ctx := testCtx(t)
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	vol, _ := pv.HostPath("data")
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(vol, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(vol, d, "id"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"a", "b", "a/id"} {
		c := &v1.Container{Name: "main", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/m", SubPath: sub}}}
		got, err := pv.Mounts(ctx, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		target := got[0].HostPath
		read := filepath.Join(target, "id")
		if sub == "a/id" {
			read = target
		}
		want := sub[:1]
		if b, err := os.ReadFile(read); err != nil || string(b) != want {
			t.Errorf("subPath %s: read %q, %v; want %q", sub, b, err, want)
		}
		if n, _ := mountsAt(t, target); n != 1 {
			t.Errorf("subPath %s: %d mounts at %s, want 1", sub, n, target)
		}
	}
}
