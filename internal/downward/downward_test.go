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

// Each volume file's bytes, as the kubelet writes them, or why there is
// none.
func TestFile(t *testing.T) {
	field := func(path string) *v1.DownwardAPIVolumeFile {
		return &v1.DownwardAPIVolumeFile{Path: "f", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(container, name, divisor string) *v1.DownwardAPIVolumeFile {
		return &v1.DownwardAPIVolumeFile{Path: "f", ResourceFieldRef: resourceRef(container, name, divisor)}
	}
	tests := []struct {
		name    string
		item    *v1.DownwardAPIVolumeFile
		want    string
		wantErr string
	}{
		{name: "labels sorted, quoted, no final newline", item: field("metadata.labels"), want: "app=\"web\"\nquote=\"say \\\"hi\\\"\"\ntier=\"front\""},
		{name: "annotations escape newlines and tabs", item: field("metadata.annotations"), want: "kubernetes.io/config.source=\"file\"\nmulti=\"line one\\nline two\\ttab\"\nunicode=\"café\""},
		{name: "one label", item: field("metadata.labels['tier']"), want: "front"},
		{name: "one annotation, unquoted", item: field("metadata.annotations['multi']"), want: "line one\nline two\ttab"},
		{name: "a missing label is empty", item: field("metadata.labels['nope']"), want: ""},
		{name: "name", item: field("metadata.name"), want: "web"},
		{name: "namespace", item: field("metadata.namespace"), want: "ns"},
		{name: "uid", item: field("metadata.uid"), want: "uid-1234"},
		{name: "cpu limit", item: res("main", "limits.cpu", "1m"), want: "250"},
		{name: "memory limit", item: res("main", "limits.memory", "1Mi"), want: "64"},
		{name: "an unset limit is the node's allocatable", item: res("nolimits", "limits.memory", ""), want: "2147483648"},
		{name: "an init container's limit", item: res("setup", "limits.memory", "1k"), want: "10000"},

		{name: "spec fields are env-only", item: field("spec.nodeName"), wantErr: `fieldRef "spec.nodeName" is not supported in a volume`},
		{name: "status fields are env-only", item: field("status.podIP"), wantErr: `fieldRef "status.podIP" is not supported in a volume`},
		{name: "subscript of another field", item: field("metadata.name['a']"), wantErr: "only metadata.labels and metadata.annotations take a ['key']"},
		{name: "no container name", item: res("", "limits.cpu", ""), wantErr: "containerName is required in a volume"},
		{name: "unknown container", item: res("ghost", "limits.cpu", ""), wantErr: `the pod has no container "ghost"`},
		{name: "no source", item: &v1.DownwardAPIVolumeFile{}, wantErr: "needs a fieldRef or a resourceFieldRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testResolver().File(testPod(), tt.item)
			checkValue(t, "File", got, err, tt.want, tt.wantErr)
		})
	}
}

// checkValue fails t unless a resolver gave want, or an error saying
// wantErr when wantErr is set.
func checkValue(t *testing.T, call, got string, err error, want, wantErr string) {
	t.Helper()
	switch {
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s = %q, %v; want an error saying %q", call, got, err, wantErr)
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", call, err)
	case wantErr == "" && got != want:
		t.Errorf("%s = %q, want %q", call, got, want)
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
		wantErr     string
	}{
		// The metadata fields are File's (TestFile has them all).
		{name: "name", src: fieldRef("metadata.name"), want: "web"},
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

		{name: "an unsupported field", src: fieldRef("spec.priority"), wantErr: `fieldRef "spec.priority" is not supported`},
		{name: "an unknown container", src: res("ghost", "limits.cpu", ""), wantErr: `the pod has no container "ghost"`},
		{name: "an unknown kind", src: res("", "usage.cpu", ""), wantErr: `resourceFieldRef "usage.cpu" is not supported: use limits.<name> or requests.<name>`},
		{name: "an unknown resource", src: res("", "limits.nvidia.com/gpu", ""), wantErr: "use cpu, memory, ephemeral-storage or hugepages-<size>"},
		{name: "a negative divisor", src: res("", "limits.memory", "-1Mi"), wantErr: "divisor -1Mi is not a positive amount of memory"},
		{name: "a secret is no downward API", src: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}, wantErr: "needs a fieldRef or a resourceFieldRef"},
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
			checkValue(t, "Env", got, err, tt.want, tt.wantErr)
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
