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

// Each file's bytes, as the kubelet writes them.
func TestDownwardAPIContent(t *testing.T) {
	allocatable := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("2"),
		v1.ResourceMemory:           resource.MustParse("2Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
	}
	field := func(path string) v1.DownwardAPIVolumeFile {
		return v1.DownwardAPIVolumeFile{Path: "f", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(ctr, name, divisor string) v1.DownwardAPIVolumeFile {
		ref := &v1.ResourceFieldSelector{ContainerName: ctr, Resource: name}
		if divisor != "" {
			ref.Divisor = resource.MustParse(divisor)
		}
		return v1.DownwardAPIVolumeFile{Path: "f", ResourceFieldRef: ref}
	}
	tests := []struct {
		name string
		item v1.DownwardAPIVolumeFile
		want string
	}{
		{"labels sorted, quoted, no final newline", field("metadata.labels"), "app=\"web\"\nquote=\"say \\\"hi\\\"\"\ntier=\"front\""},
		{"annotations escape newlines and tabs", field("metadata.annotations"), "kubernetes.io/config.source=\"file\"\nmulti=\"line one\\nline two\\ttab\"\nunicode=\"café\""},
		{"one label", field("metadata.labels['tier']"), "front"},
		{"one annotation, unquoted", field("metadata.annotations['multi']"), "line one\nline two\ttab"},
		{"a missing label is empty", field("metadata.labels['nope']"), ""},
		{"name", field("metadata.name"), "web"},
		{"namespace", field("metadata.namespace"), "ns"},
		{"uid", field("metadata.uid"), "uid-1234"},
		{"cpu limit rounds up to cores", res("main", "limits.cpu", ""), "1"},
		{"cpu limit in millicores", res("main", "limits.cpu", "1m"), "250"},
		{"cpu request", res("main", "requests.cpu", "1m"), "100"},
		{"memory limit in bytes", res("main", "limits.memory", ""), "67108864"},
		{"memory limit in Mi", res("main", "limits.memory", "1Mi"), "64"},
		{"memory request in Mi", res("main", "requests.memory", "1Mi"), "32"},
		{"memory request rounds up", res("main", "requests.memory", "1Gi"), "1"},
		{"ephemeral-storage request", res("main", "requests.ephemeral-storage", "1Mi"), "1024"},
		{"an unset cpu limit is the node's allocatable", res("nolimits", "limits.cpu", ""), "2"},
		{"an unset memory limit is the node's allocatable", res("nolimits", "limits.memory", ""), "2147483648"},
		{"an unset ephemeral-storage limit is the node's allocatable", res("main", "limits.ephemeral-storage", "1Gi"), "10"},
		{"an unset request is 0", res("nolimits", "requests.cpu", ""), "0"},
		{"an init container's limit", res("setup", "limits.memory", "1k"), "10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := downwardAPIPayload(downwardPod(), []v1.DownwardAPIVolumeFile{tt.item}, 0o644, allocatable)
			if err != nil {
				t.Fatal(err)
			}
			if string(got["f"].data) != tt.want {
				t.Errorf("content = %q, want %q", got["f"].data, tt.want)
			}
		})
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

func TestDownwardAPIErrors(t *testing.T) {
	tests := []struct {
		name string
		item v1.DownwardAPIVolumeFile
		want string
	}{
		{"spec fields are env-only", v1.DownwardAPIVolumeFile{Path: "node", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}, `item "node": fieldRef "spec.nodeName" is not supported in a volume`},
		{"status fields are env-only", v1.DownwardAPIVolumeFile{Path: "ip", FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}, `fieldRef "status.podIP" is not supported`},
		{"subscript of another field", v1.DownwardAPIVolumeFile{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name['a']"}}, "only metadata.labels and metadata.annotations take a ['key']"},
		{"no container name", v1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}, "containerName is required"},
		{"unknown container", v1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "ghost", Resource: "limits.cpu"}}, `the pod has no container "ghost"`},
		{"unknown resource", v1.DownwardAPIVolumeFile{Path: "gpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.nvidia.com/gpu"}}, "is not supported"},
		{"no source", v1.DownwardAPIVolumeFile{Path: "empty"}, `item "empty": needs a fieldRef or a resourceFieldRef`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := downwardAPIPayload(downwardPod(), []v1.DownwardAPIVolumeFile{tt.item}, 0o644, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}
