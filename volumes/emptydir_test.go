package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestEmptyDirOnDisk(t *testing.T) {
	old := umask(0o022)
	defer umask(old)
	m := newTestManager(t, Config{})
	pod := testPod("uid-disk", []v1.Volume{emptyDirVolume("cache", "")})
	pv, err := m.SetUpPod(testCtx(t), pod)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(m.cfg.RootDir, "pods", "uid-disk", "volumes", "kubernetes.io~empty-dir", "cache")
	if got, _ := pv.HostPath("cache"); got != want {
		t.Errorf("host path = %s, want %s", got, want)
	}
	fi, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != os.ModeDir|0o777 {
		t.Errorf("mode %v, want drwxrwxrwx whatever the umask", fi.Mode())
	}
	// A container changed its mode and wrote a file: a resync keeps both.
	if err := os.Chmod(want, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(want, "data"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetUpPod(testCtx(t), pod); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(want); fi.Mode().Perm() != 0o700 {
		t.Errorf("resync changed the mode to %v", fi.Mode().Perm())
	}
	if got := readVolumeFile(t, want, "data"); got != "kept" {
		t.Errorf("data = %q", got)
	}
}

func TestEmptyDirInMemory(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, Config{})
	vol := emptyDirVolume("scratch", v1.StorageMediumMemory)
	vol.EmptyDir.SizeLimit = ptr.To(resource.MustParse("64Mi"))
	pod := testPod("uid-mem", []v1.Volume{vol})
	ctx := testCtx(t)
	pv, err := m.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := pv.HostPath("scratch")
	n, opts := mountsAt(t, dir)
	if n != 1 || !strings.Contains(opts, "size=65536k") {
		t.Fatalf("%d mounts at %s, options %q; want one tmpfs of size=65536k", n, dir, opts)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("in memory"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Idempotent: a resync mounts nothing more and keeps the content.
	for range 3 {
		if _, err := m.SetUpPod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := mountsAt(t, dir); n != 1 {
		t.Errorf("%d mounts at %s after resyncs, want 1", n, dir)
	}
	if got := readVolumeFile(t, dir, "f"); got != "in memory" {
		t.Errorf("f = %q", got)
	}
}

func TestEmptyDirRefusedMedia(t *testing.T) {
	tests := []struct {
		medium v1.StorageMedium
		want   string
	}{
		{v1.StorageMediumHugePages, `volume "v": emptyDir medium HugePages is not supported: minikubelet does not manage huge pages`},
		{"HugePages-2Mi", `emptyDir medium HugePages-2Mi is not supported`},
		{"SSD", `emptyDir medium "SSD" is not supported`},
	}
	for _, tt := range tests {
		t.Run(string(tt.medium), func(t *testing.T) {
			m := newTestManager(t, Config{})
			_, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{emptyDirVolume("v", tt.medium)}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMemoryBackedSize(t *testing.T) {
	mem := func(s string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(s)}}
	}
	withContainers := func(rs ...v1.ResourceRequirements) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers = nil
			for i, r := range rs {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Resources: r})
			}
		}
	}
	withInit := func(r v1.ResourceRequirements, sidecar bool) func(*v1.Pod) {
		return func(p *v1.Pod) {
			c := v1.Container{Name: "init" + string(rune('0'+len(p.Spec.InitContainers))), Resources: r}
			if sidecar {
				c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
	}
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	const mi = 1 << 20
	tests := []struct {
		name        string
		pod         *v1.Pod
		sizeLimit   *resource.Quantity
		allocatable v1.ResourceList
		want        int64
	}{
		{"nothing known: unsized", testPod("u", nil), nil, nil, 0},
		{"sizeLimit", testPod("u", nil), q("64Mi"), nil, 64 * mi},
		{"pod limit: the sum of its containers'", testPod("u", nil, withContainers(mem("100Mi"), mem("28Mi"))), nil, nil, 128 * mi},
		{"a container without a limit: the pod is not limited", testPod("u", nil, withContainers(mem("100Mi"), v1.ResourceRequirements{})), nil, nil, 0},
		{"sizeLimit above the pod's limit", testPod("u", nil, withContainers(mem("32Mi"))), q("64Mi"), nil, 32 * mi},
		{"allocatable when smaller", testPod("u", nil), q("4Gi"), v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}, 1024 * mi},
		{"allocatable alone", testPod("u", nil, withContainers(v1.ResourceRequirements{})), nil, v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}, 1024 * mi},
		{"an init container's larger limit", testPod("u", nil, withContainers(mem("10Mi")), withInit(mem("50Mi"), false)), nil, nil, 50 * mi},
		{"sidecars add to the containers", testPod("u", nil, withContainers(mem("10Mi")), withInit(mem("5Mi"), true)), nil, nil, 15 * mi},
		{"a zero sizeLimit is ignored", testPod("u", nil), q("0"), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memoryBackedSize(tt.pod, tt.sizeLimit, tt.allocatable); got != tt.want {
				t.Errorf("size = %d, want %d", got, tt.want)
			}
		})
	}
}
