package volumes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func downwardVolume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "meta/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
	}}}}
}

// A downwardAPI volume lives on a tmpfs in the kubelet's directory, and
// follows the pod's labels at each sync, atomically.
func TestDownwardAPIVolume(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, Config{})
	pod := testPod("uid-dw", []v1.Volume{downwardVolume("info")})
	pod.Labels = map[string]string{"app": "web"}
	ctx := testCtx(t)
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := pv.HostPath("info")
	if want := filepath.Join(m.PodDir("uid-dw"), "volumes", "kubernetes.io~downward-api", "info"); dir != want {
		t.Errorf("host path %s, want %s", dir, want)
	}
	if n, _ := mountsAt(t, dir); n != 1 {
		t.Errorf("%d mounts at %s, want a tmpfs", n, dir)
	}
	if got := readVolumeFile(t, dir, "labels"); got != `app="web"` {
		t.Errorf("labels = %q", got)
	}
	if got := readVolumeFile(t, dir, "meta/name"); got != "web" {
		t.Errorf("meta/name = %q", got)
	}
	v1Version := version(t, dir)

	// Same pod: nothing rewritten.
	if _, err := m.SetUpPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if v := version(t, dir); v != v1Version {
		t.Errorf("unchanged labels wrote a new version %s", v)
	}
	// A label edit reaches the file.
	pod.Labels["tier"] = "front"
	if _, err := m.SetUpPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := readVolumeFile(t, dir, "labels"); got != "app=\"web\"\ntier=\"front\"" {
		t.Errorf("labels after the edit = %q", got)
	}
	if v := version(t, dir); v == v1Version {
		t.Error("the edit did not make a new version")
	}
	if n, _ := mountsAt(t, dir); n != 1 {
		t.Errorf("%d mounts at %s after resyncs, want 1", n, dir)
	}
}

// Standalone: configMap, secret and object projections fail clearly;
// a projected downwardAPI works.
func TestContentVolumesWithoutAPIServer(t *testing.T) {
	tests := []struct {
		name string
		vol  v1.VolumeSource
		want string
	}{
		{"configMap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			`volume "v": configMap volumes need an apiserver; static pods cannot use them`},
		{"secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}},
			`volume "v": secret volumes need an apiserver; static pods cannot use them`},
		{"projected configMap", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{DownwardAPI: &v1.DownwardAPIProjection{}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
		}}}, `volume "v": projected sources[1]: configMap projections need an apiserver; static pods cannot use them`},
		{"projected token", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		}}}, `serviceAccountToken projections need an apiserver`},
		{"persistentVolumeClaim", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
			`volume "v": persistentVolumeClaim volumes are not supported: minikubelet supports emptyDir, hostPath, downwardAPI, configMap, secret, projected and image`},
		{"image", v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}, `volume "v": image volumes need a container runtime that mounts images through CRI (containerd 2.1 or later, CRI-O 1.31 or later); this node's container runtime does not, and the pod does not run without the volume`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, Config{})
			_, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{{Name: "v", VolumeSource: tt.vol}}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestEveryFailingVolumeIsReported(t *testing.T) {
	m := newTestManager(t, Config{})
	_, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{
		hostPathVolume("a", "/nonexistent-a", v1.HostPathDirectory),
		emptyDirVolume("ok", ""),
		hostPathVolume("b", "/nonexistent-b", v1.HostPathFile),
	}))
	want := `volume "a": hostPath type Directory: /nonexistent-a does not exist; volume "b": hostPath type File: /nonexistent-b does not exist`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func objectsForTest() *fakeObjects {
	return &fakeObjects{
		configMaps: map[string]*v1.ConfigMap{"ns/cfg": {
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"},
			Data:       map[string]string{"app.yaml": "port: 80\n", "level": "debug"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2}},
		}},
		secrets: map[string]*v1.Secret{"ns/creds": {
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
			Data:       map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cret")},
		}},
		token: "tok",
	}
}

// configMap, secret and projected volumes through an object source: keys,
// items, modes, optional sources, and tokens bound to the pod.
func TestObjectVolumes(t *testing.T) {
	requireRoot(t) // secret and projected volumes are on a tmpfs
	type file struct {
		content string
		mode    os.FileMode
	}
	tests := []struct {
		name  string
		vol   v1.VolumeSource
		dir   string
		files map[string]file
		// absent are keys that must not be in the volume.
		absent []string
		want   string // an error, "" for none
	}{
		{
			name:  "configMap: every key, default mode 0644",
			vol:   v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			dir:   "kubernetes.io~configmap",
			files: map[string]file{"app.yaml": {"port: 80\n", 0o644}, "level": {"debug", 0o644}, "blob": {"\x00\x01\x02", 0o644}},
		},
		{
			name: "configMap: items with paths and modes",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o440), Items: []v1.KeyToPath{
				{Key: "app.yaml", Path: "conf/app.yaml"},
				{Key: "level", Path: "level.txt", Mode: ptr.To[int32](0o400)},
			}}},
			dir:    "kubernetes.io~configmap",
			files:  map[string]file{"conf/app.yaml": {"port: 80\n", 0o440}, "level.txt": {"debug", 0o400}},
			absent: []string{"blob", "level"},
		},
		{
			name: "configMap: a missing key",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{
				{Key: "nope", Path: "nope"},
			}}},
			want: `volume "v": configMap ns/cfg: no key "nope" (items[].key)`,
		},
		{
			name: "configMap: a missing key of an optional one is skipped",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: ptr.To(true), Items: []v1.KeyToPath{
				{Key: "nope", Path: "nope"}, {Key: "level", Path: "level"},
			}}},
			dir:    "kubernetes.io~configmap",
			files:  map[string]file{"level": {"debug", 0o644}},
			absent: []string{"nope"},
		},
		{
			name: "configMap: not found",
			vol:  v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}}},
			want: `volume "v": get configMap ns/ghost: configmaps "ghost" not found`,
		},
		{
			name: "configMap: optional and not found is empty",
			vol:  v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}, Optional: ptr.To(true)}},
			dir:  "kubernetes.io~configmap",
		},
		{
			name:  "secret",
			vol:   v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o400)}},
			dir:   "kubernetes.io~secret",
			files: map[string]file{"user": {"admin", 0o400}, "pass": {"s3cret", 0o400}},
		},
		{
			name: "secret: not found",
			vol:  v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "ghost"}},
			want: `volume "v": get secret ns/ghost: secrets "ghost" not found`,
		},
		{
			name: "projected: all sources in one directory",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o640), Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "level", Path: "level"}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Items: []v1.KeyToPath{{Key: "user", Path: "creds/user", Mode: ptr.To[int32](0o600)}}}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}, Optional: ptr.To(true)}},
			}}},
			dir: "kubernetes.io~projected",
			files: map[string]file{
				"level":      {"debug", 0o640},
				"creds/user": {"admin", 0o600},
				"name":       {"web", 0o640},
				"token":      {"tok:ns/builder", 0o640},
			},
		},
		{
			name: "projected: every failing source is named",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}},
			}}},
			want: `volume "v": projected sources[0]: get secret ns/ghost: secrets "ghost" not found; projected sources[1]: get configMap ns/gone: configmaps "gone" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := objectsForTest()
			m := newTestManager(t, Config{Objects: objects})
			pod := testPod("uid-obj", []v1.Volume{{Name: "v", VolumeSource: tt.vol}})
			pod.Spec.ServiceAccountName = "builder"
			pv, err := m.SetUpPod(testCtx(t), pod)
			if tt.want != "" {
				if err == nil || err.Error() != tt.want {
					t.Fatalf("err = %v\nwant %s", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir, _ := pv.HostPath("v")
			if want := filepath.Join(m.PodDir("uid-obj"), "volumes", tt.dir, "v"); dir != want {
				t.Errorf("host path %s, want %s", dir, want)
			}
			for name, f := range tt.files {
				if got := readVolumeFile(t, dir, name); got != f.content {
					t.Errorf("%s = %q, want %q", name, got, f.content)
				}
				fi, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != f.mode {
					t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), f.mode)
				}
			}
			for _, name := range tt.absent {
				if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
					t.Errorf("%s is there (%v)", name, err)
				}
			}
			mounts, err := pv.Mounts(testCtx(t), &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/v"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !mounts[0].Readonly {
				t.Error("a content volume is mounted read-write")
			}
			if len(objects.tokenReqs) > 0 {
				req := objects.tokenReqs[0]
				ref := req.Spec.BoundObjectRef
				if !slices.Equal(req.Spec.Audiences, []string{"vault"}) || ptr.Deref(req.Spec.ExpirationSeconds, 0) != 3600 ||
					ref == nil || ref.Kind != "Pod" || ref.Name != "web" || ref.UID != "uid-obj" {
					t.Errorf("token request = %+v", req.Spec)
				}
			}
		})
	}
}

// A configMap edit reaches the volume; a key removed from it disappears.
func TestConfigMapUpdate(t *testing.T) {
	objects := objectsForTest()
	m := newTestManager(t, Config{Objects: objects})
	pod := testPod("uid-cm", []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}})
	ctx := context.Background()
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := pv.HostPath("v")
	objects.mu.Lock()
	objects.configMaps["ns/cfg"] = &v1.ConfigMap{Data: map[string]string{"level": "info"}}
	objects.mu.Unlock()
	if _, err := m.SetUpPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := readVolumeFile(t, dir, "level"); got != "info" {
		t.Errorf("level = %q", got)
	}
	for _, gone := range []string{"app.yaml", "blob"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", gone, err)
		}
	}
}

// With a pod fsGroup, as the kubelet's SetVolumeOwnership: content files
// go to the group with group read added (defaultMode 0440 stays 0440,
// 0400 becomes 0440), a projected token is 0640, and an emptyDir's
// directory is the group's, group-writable and setgid. A second set-up
// (the next sync) finds nothing to change.
func TestFSGroupOwnership(t *testing.T) {
	requireRoot(t)
	const gid = 1234
	objects := objectsForTest()
	m := newTestManager(t, Config{Objects: objects})
	pod := testPod("uid-fsgroup", []v1.Volume{
		{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "level", Path: "level"}}}},
		}}}},
		emptyDirVolume("e", v1.StorageMediumDefault),
	}, func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](gid)} })
	check := func(path string, wantMode os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode()&(os.ModePerm|os.ModeSetgid) != wantMode || st.Gid != gid || st.Uid != 0 {
			t.Errorf("%s: mode %v uid %d gid %d, want %v root:%d", path, fi.Mode(), st.Uid, st.Gid, wantMode, gid)
		}
	}
	for range 2 {
		pv, err := m.SetUpPod(testCtx(t), pod)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := pv.HostPath("s")
		p, _ := pv.HostPath("p")
		e, _ := pv.HostPath("e")
		check(filepath.Join(s, "user"), 0o440)
		check(filepath.Join(p, "token"), 0o640)
		check(filepath.Join(p, "level"), 0o644)
		check(e, 0o777|os.ModeSetgid)
	}
}
