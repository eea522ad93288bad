package volumes

import (
	"io/fs"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// downwardPod has labels and annotations that need quoting, and two
// containers with resources.
func downwardPod() *v1.Pod {
	p := testPod("uid-1234", nil)
	p.Labels = map[string]string{"tier": "front", "app": "web", "quote": `say "hi"`}
	p.Annotations = map[string]string{
		"kubernetes.io/config.source": "file",
		"multi":                       "line one\nline two\ttab",
		"unicode":                     "café",
	}
	p.Spec.Containers = []v1.Container{
		{Name: "main", Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
		}},
		{Name: "nolimits"},
	}
	p.Spec.InitContainers = []v1.Container{{Name: "setup", Resources: v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("10M")},
	}}}
	return p
}

// Every item becomes one file under its path, with what the downward-API
// resolver (internal/downward, which has the value-by-value tests) makes
// of it; an unset limit reads as the node's allocatable amount.
func TestDownwardAPIPayload(t *testing.T) {
	allocatable := v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}
	items := []v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
		{Path: "meta/tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
		{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "nolimits", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
	}
	got, err := downwardAPIPayload(downwardPod(), items, 0o644, allocatable)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"labels":    "app=\"web\"\nquote=\"say \\\"hi\\\"\"\ntier=\"front\"",
		"meta/tier": "front",
		"cpu":       "250",
		"mem":       "2048",
	}
	if len(got) != len(want) {
		t.Errorf("files %v, want %d", got, len(want))
	}
	for path, content := range want {
		if string(got[path].data) != content {
			t.Errorf("%s = %q, want %q", path, got[path].data, content)
		}
	}
}

func TestDownwardAPIModes(t *testing.T) {
	items := []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "own", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o400)},
	}
	tests := []struct {
		name        string
		defaultMode *int32
		want        map[string]fs.FileMode
	}{
		{"no defaultMode: 0644", nil, map[string]fs.FileMode{"name": 0o644, "own": 0o400}},
		{"defaultMode", ptr.To[int32](0o440), map[string]fs.FileMode{"name": 0o440, "own": 0o400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := downwardAPIPayload(downwardPod(), items, modeOr(tt.defaultMode, defaultContentMode), nil)
			if err != nil {
				t.Fatal(err)
			}
			for path, mode := range tt.want {
				if got[path].mode != mode {
					t.Errorf("%s: mode %v, want %v", path, got[path].mode, mode)
				}
			}
		})
	}
}

// Every item that cannot be computed is reported, named by its path.
func TestDownwardAPIErrors(t *testing.T) {
	items := []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "node", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}},
		{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}},
		{Path: "empty"},
	}
	_, err := downwardAPIPayload(downwardPod(), items, 0o644, nil)
	for _, want := range []string{
		`item "node": fieldRef "spec.nodeName" is not supported in a volume`,
		`item "cpu": resourceFieldRef "limits.cpu": containerName is required`,
		`item "empty": needs a fieldRef or a resourceFieldRef`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), `"name"`) {
		t.Errorf("err = %v names an item that can be computed", err)
	}
}
