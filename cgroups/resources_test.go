package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func res(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func sidecar(name string, req, lim v1.ResourceList) v1.Container {
	c := ctr(name, req, lim)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func podOf(init []v1.Container, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{InitContainers: init, Containers: cs}}
}

func TestPodResources(t *testing.T) {
	const mi = 1 << 20
	tests := []struct {
		name string
		pod  *v1.Pod
		want ResourceConfig
	}{
		{"besteffort", podOf(nil, ctr("a", nil, nil)),
			ResourceConfig{CPUShares: 2, CPUQuota: -1, CPUPeriod: 100000}},
		{"guaranteed sums containers", podOf(nil, ctr("a", nil, res("200m", "64Mi")), ctr("b", nil, res("300m", "32Mi"))),
			ResourceConfig{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 96 * mi}},
		{"burstable with every limit", podOf(nil, ctr("a", res("100m", "16Mi"), res("1", "64Mi"))),
			ResourceConfig{CPUShares: 102, CPUQuota: 100000, CPUPeriod: 100000, Memory: 64 * mi}},
		{"burstable with a container lacking limits", podOf(nil, ctr("a", res("100m", "16Mi"), res("1", "64Mi")), ctr("b", res("100m", ""), nil)),
			ResourceConfig{CPUShares: 204, CPUQuota: -1, CPUPeriod: 100000}},
		{"burstable with only memory limits", podOf(nil, ctr("a", res("100m", ""), res("", "64Mi"))),
			ResourceConfig{CPUShares: 102, CPUQuota: -1, CPUPeriod: 100000, Memory: 64 * mi}},
		{"an init container without limit voids them", podOf([]v1.Container{ctr("i", res("100m", ""), nil)}, ctr("a", nil, res("1", "64Mi"))),
			ResourceConfig{CPUShares: 1024, CPUQuota: -1, CPUPeriod: 100000}},
		{"a big init container sets the pod's needs", podOf([]v1.Container{ctr("i", nil, res("2", "256Mi"))}, ctr("a", nil, res("1", "64Mi"))),
			ResourceConfig{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: 100000, Memory: 256 * mi}},
		{"sidecars add to the containers", podOf([]v1.Container{sidecar("s", nil, res("500m", "32Mi"))}, ctr("a", nil, res("1", "64Mi"))),
			ResourceConfig{CPUShares: 1536, CPUQuota: 150000, CPUPeriod: 100000, Memory: 96 * mi}},
		{"a request alone defaults nothing", podOf(nil, ctr("a", res("250m", "1Gi"), nil)),
			ResourceConfig{CPUShares: 256, CPUQuota: -1, CPUPeriod: 100000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodResources(tt.pod); got != tt.want {
				t.Errorf("PodResources = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPodResourcesOverhead(t *testing.T) {
	p := podOf(nil, ctr("a", nil, res("1", "64Mi")))
	p.Spec.Overhead = res("100m", "16Mi")
	got := PodResources(p)
	want := ResourceConfig{CPUShares: 1126, CPUQuota: 110000, CPUPeriod: 100000, Memory: 80 << 20}
	if got != want {
		t.Errorf("PodResources = %+v, want %+v", got, want)
	}
}

func TestMilliCPUConversions(t *testing.T) {
	tests := []struct {
		milli  int64
		shares uint64
		quota  int64
	}{
		{0, 2, 0},
		{1, 2, 1000},
		{5, 5, 1000},
		{250, 256, 25000},
		{1000, 1024, 100000},
		{300000, 262144, 30000000},
	}
	for _, tt := range tests {
		if got := MilliCPUToShares(tt.milli); got != tt.shares {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.shares)
		}
		if got := MilliCPUToQuota(tt.milli, QuotaPeriod); got != tt.quota {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tt.milli, got, tt.quota)
		}
	}
}

// Grown holds both configurations: the larger shares, quota and memory
// limit, and no limit where either has none.
func TestGrown(t *testing.T) {
	tests := []struct {
		name string
		a, b ResourceConfig
		want ResourceConfig
	}{
		{
			name: "larger of each",
			a:    ResourceConfig{CPUShares: 512, CPUQuota: 20000, CPUPeriod: QuotaPeriod, Memory: 128 << 20},
			b:    ResourceConfig{CPUShares: 256, CPUQuota: 50000, CPUPeriod: QuotaPeriod, Memory: 64 << 20},
			want: ResourceConfig{CPUShares: 512, CPUQuota: 50000, CPUPeriod: QuotaPeriod, Memory: 128 << 20},
		},
		{
			name: "no quota, no memory limit win",
			a:    ResourceConfig{CPUShares: 2, CPUQuota: -1, CPUPeriod: QuotaPeriod, Memory: 0},
			b:    ResourceConfig{CPUShares: 204, CPUQuota: 20000, CPUPeriod: QuotaPeriod, Memory: 64 << 20},
			want: ResourceConfig{CPUShares: 204, CPUQuota: -1, CPUPeriod: QuotaPeriod, Memory: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Grown(tt.a, tt.b); got != tt.want {
				t.Errorf("Grown = %+v, want %+v", got, tt.want)
			}
			if got := Grown(tt.b, tt.a); got != tt.want {
				t.Errorf("Grown reversed = %+v, want %+v", got, tt.want)
			}
		})
	}
}
