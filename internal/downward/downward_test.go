package downward

import (
	"math"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPod has labels and annotations that need quoting, a container with
// limits and requests, one with none, and an init container.
func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "ns", UID: "uid-1234",
			Labels: map[string]string{"tier": "front", "app": "web", "quote": `say "hi"`},
			Annotations: map[string]string{
				"kubernetes.io/config.source": "file",
				"multi":                       "line one\nline two\ttab",
				"unicode":                     "café",
			},
		},
		Spec: v1.PodSpec{
			ServiceAccountName: "sa",
			Containers: []v1.Container{
				{Name: "main", Resources: v1.ResourceRequirements{
					Limits:   list("250m", "64Mi", ""),
					Requests: list("100m", "32Mi", "1Gi"),
				}},
				{Name: "nolimits"},
				{Name: "odd", Resources: v1.ResourceRequirements{
					Limits:   list("1500m", "100000001", ""),
					Requests: list("1m", "1", ""),
				}},
			},
			InitContainers: []v1.Container{{Name: "setup", Resources: v1.ResourceRequirements{
				Limits: list("", "10M", ""),
			}}},
		},
	}
}

func list(cpu, memory, ephemeral string) v1.ResourceList {
	l := v1.ResourceList{}
	for name, q := range map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: memory, v1.ResourceEphemeralStorage: ephemeral} {
		if q != "" {
			l[name] = resource.MustParse(q)
		}
	}
	return l
}

func testResolver() *Resolver {
	return &Resolver{NodeName: "node1", HostIP: "192.0.2.1", Allocatable: list("2", "2Gi", "10Gi")}
}

func fieldRef(path string) *v1.EnvVarSource {
	return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

func resourceRef(container, name, divisor string) *v1.ResourceFieldSelector {
	ref := &v1.ResourceFieldSelector{ContainerName: container, Resource: name}
	if divisor != "" {
		ref.Divisor = resource.MustParse(divisor)
	}
	return ref
}

// Each volume file's bytes, as the kubelet writes them.
func TestFile(t *testing.T) {
	field := func(path string) *v1.DownwardAPIVolumeFile {
		return &v1.DownwardAPIVolumeFile{Path: "f", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(container, name, divisor string) *v1.DownwardAPIVolumeFile {
		return &v1.DownwardAPIVolumeFile{Path: "f", ResourceFieldRef: resourceRef(container, name, divisor)}
	}
	tests := []struct {
		name string
		item *v1.DownwardAPIVolumeFile
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
		{"cpu limit", res("main", "limits.cpu", "1m"), "250"},
		{"memory limit", res("main", "limits.memory", "1Mi"), "64"},
		{"an unset limit is the node's allocatable", res("nolimits", "limits.memory", ""), "2147483648"},
		{"an init container's limit", res("setup", "limits.memory", "1k"), "10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testResolver().File(testPod(), tt.item)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("File = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name string
		item *v1.DownwardAPIVolumeFile
		want string
	}{
		{"spec fields are env-only", &v1.DownwardAPIVolumeFile{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}, `fieldRef "spec.nodeName" is not supported in a volume`},
		{"status fields are env-only", &v1.DownwardAPIVolumeFile{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}, `fieldRef "status.podIP" is not supported in a volume`},
		{"subscript of another field", &v1.DownwardAPIVolumeFile{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name['a']"}}, "only metadata.labels and metadata.annotations take a ['key']"},
		{"no container name", &v1.DownwardAPIVolumeFile{ResourceFieldRef: resourceRef("", "limits.cpu", "")}, "containerName is required in a volume"},
		{"unknown container", &v1.DownwardAPIVolumeFile{ResourceFieldRef: resourceRef("ghost", "limits.cpu", "")}, `the pod has no container "ghost"`},
		{"no source", &v1.DownwardAPIVolumeFile{}, "needs a fieldRef or a resourceFieldRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testResolver().File(testPod(), tt.item)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("File: err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// Env values of fieldRefs and resourceFieldRefs, read by container
// "main" unless the reference names another.
func TestEnv(t *testing.T) {
	hostNetwork := testPod()
	hostNetwork.Spec.HostNetwork = true
	res := func(container, name, divisor string) *v1.EnvVarSource {
		return &v1.EnvVarSource{ResourceFieldRef: resourceRef(container, name, divisor)}
	}
	podIPs := []string{"10.1.2.3", "fd00::3"}
	tests := []struct {
		name        string
		pod         *v1.Pod
		container   string
		src         *v1.EnvVarSource
		podIPs      []string
		allocatable v1.ResourceList
		want        string
	}{
		{name: "name", src: fieldRef("metadata.name"), want: "web"},
		{name: "namespace", src: fieldRef("metadata.namespace"), want: "ns"},
		{name: "uid", src: fieldRef("metadata.uid"), want: "uid-1234"},
		{name: "one label", src: fieldRef("metadata.labels['tier']"), want: "front"},
		{name: "one annotation", src: fieldRef("metadata.annotations['unicode']"), want: "café"},
		{name: "a missing annotation is empty", src: fieldRef("metadata.annotations['nope']"), want: ""},
		{name: "node name", src: fieldRef("spec.nodeName"), want: "node1"},
		{name: "service account", src: fieldRef("spec.serviceAccountName"), want: "sa"},
		{name: "host IP", src: fieldRef("status.hostIP"), want: "192.0.2.1"},
		{name: "host IPs", src: fieldRef("status.hostIPs"), want: "192.0.2.1"},
		{name: "pod IP is the primary one", src: fieldRef("status.podIP"), podIPs: podIPs, want: "10.1.2.3"},
		{name: "pod IPs, comma separated", src: fieldRef("status.podIPs"), podIPs: podIPs, want: "10.1.2.3,fd00::3"},
		{name: "no pod IP yet", src: fieldRef("status.podIP"), want: ""},
		{name: "host network pod's IP is the host's", pod: hostNetwork, src: fieldRef("status.podIP"), podIPs: podIPs, want: "192.0.2.1"},
		{name: "host network pod's IPs are the host's", pod: hostNetwork, src: fieldRef("status.podIPs"), podIPs: podIPs, want: "192.0.2.1"},

		{name: "cpu limit rounds up to whole cores", src: res("", "limits.cpu", ""), want: "1"},
		{name: "cpu limit with divisor 1", src: res("", "limits.cpu", "1"), want: "1"},
		{name: "cpu limit in millicores", src: res("", "limits.cpu", "1m"), want: "250"},
		{name: "cpu request in millicores", src: res("", "requests.cpu", "1m"), want: "100"},
		{name: "cpu request rounds up", src: res("", "requests.cpu", ""), want: "1"},
		{name: "1500m rounds up to 2", container: "odd", src: res("", "limits.cpu", ""), want: "2"},
		{name: "memory limit in bytes", src: res("", "limits.memory", ""), want: "67108864"},
		{name: "memory limit in Mi", src: res("", "limits.memory", "1Mi"), want: "64"},
		{name: "memory limit in M", src: res("", "limits.memory", "1M"), want: "68"},
		{name: "memory request in Ki", src: res("", "requests.memory", "1Ki"), want: "32768"},
		{name: "memory request rounds up", src: res("", "requests.memory", "1Gi"), want: "1"},
		{name: "one byte over rounds up", container: "odd", src: res("", "limits.memory", "1M"), want: "101"},
		{name: "a one-byte request in Ei is 1", container: "odd", src: res("", "requests.memory", "1Ei"), want: "1"},
		{name: "ephemeral-storage request", src: res("", "requests.ephemeral-storage", "1Mi"), want: "1024"},
		{name: "containerName defaults to the reading container", container: "odd", src: res("", "limits.cpu", "1m"), want: "1500"},
		{name: "containerName names another container", container: "odd", src: res("main", "limits.cpu", "1m"), want: "250"},
		{name: "an init container's limit", src: res("setup", "limits.memory", "1k"), want: "10000"},

		{name: "no cpu limit: the node's allocatable", container: "nolimits", src: res("", "limits.cpu", ""), want: "2"},
		{name: "no cpu limit, in millicores", container: "nolimits", src: res("", "limits.cpu", "1m"), want: "2000"},
		{name: "no memory limit: the node's allocatable", container: "nolimits", src: res("", "limits.memory", "1Mi"), want: "2048"},
		{name: "no ephemeral-storage limit: the node's allocatable", src: res("", "limits.ephemeral-storage", "1Gi"), want: "10"},
		{name: "an init container without a cpu limit", src: res("setup", "limits.cpu", "1m"), want: "2000"},
		{name: "no limit and no allocatable known: 0", container: "nolimits", src: res("", "limits.memory", ""), allocatable: v1.ResourceList{}, want: "0"},
		{name: "no request: 0, not the allocatable", container: "nolimits", src: res("", "requests.memory", ""), want: "0"},
		{name: "no hugepages limit: 0", src: res("", "limits.hugepages-2Mi", "1Mi"), want: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			if pod == nil {
				pod = testPod()
			}
			name := tt.container
			if name == "" {
				name = "main"
			}
			r := testResolver()
			if tt.allocatable != nil {
				r.Allocatable = tt.allocatable
			}
			var c *v1.Container
			for i := range pod.Spec.Containers {
				if pod.Spec.Containers[i].Name == name {
					c = &pod.Spec.Containers[i]
				}
			}
			got, err := r.Env(pod, c, tt.src, tt.podIPs)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Env = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvErrors(t *testing.T) {
	tests := []struct {
		name string
		src  *v1.EnvVarSource
		want string
	}{
		{"an unsupported field", fieldRef("spec.priority"), `fieldRef "spec.priority" is not supported`},
		{"an unknown container", &v1.EnvVarSource{ResourceFieldRef: resourceRef("ghost", "limits.cpu", "")}, `the pod has no container "ghost"`},
		{"an unknown kind", &v1.EnvVarSource{ResourceFieldRef: resourceRef("", "usage.cpu", "")}, `resourceFieldRef "usage.cpu" is not supported: use limits.<name> or requests.<name>`},
		{"an unknown resource", &v1.EnvVarSource{ResourceFieldRef: resourceRef("", "limits.nvidia.com/gpu", "")}, "use cpu, memory, ephemeral-storage or hugepages-<size>"},
		{"a negative divisor", &v1.EnvVarSource{ResourceFieldRef: resourceRef("", "limits.memory", "-1Mi")}, "divisor -1Mi is not a positive amount of memory"},
		{"a secret is no downward API", &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}, "needs a fieldRef or a resourceFieldRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			_, err := testResolver().Env(pod, &pod.Spec.Containers[0], tt.src, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Env: err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestCeilDiv(t *testing.T) {
	tests := []struct{ a, b, want int64 }{
		{0, 1, 0},
		{1, 1, 1},
		{250, 1000, 1},
		{1000, 1000, 1},
		{1001, 1000, 2},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, 2, math.MaxInt64/2 + 1},
		{math.MaxInt64, math.MaxInt64, 1},
	}
	for _, tt := range tests {
		if got := ceilDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("ceilDiv(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
