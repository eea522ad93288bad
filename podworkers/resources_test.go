package podworkers

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestHugePageUnitSize(t *testing.T) {
	tests := []struct {
		size    int64
		want    string
		wantErr bool
	}{
		{2 << 20, "2MB", false},
		{1 << 30, "1GB", false},
		{64 << 10, "64KB", false},
		{32 << 20, "32MB", false},
		{16 << 30, "16GB", false},
		{1000, "1000B", false},
		{3000, "", true}, // not a whole number of KB and above 1024
	}
	for _, tt := range tests {
		got, err := hugePageUnitSize(tt.size)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("hugePageUnitSize(%d) = %q, %v; want %q, error %v", tt.size, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLinuxResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name       string
		res        v1.ResourceRequirements
		wantShares int64
		wantQuota  int64
		wantMemory int64
		wantHuge   map[string]uint64
	}{
		{
			name:       "best effort",
			wantShares: 2,
		},
		{
			name: "request and limit",
			res: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("64Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")},
			},
			wantShares: 256, wantQuota: 50000, wantMemory: 128 << 20,
		},
		{
			name:       "cpu limit only: the request defaults to it",
			res:        v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("500m")}},
			wantShares: 512, wantQuota: 50000,
		},
		{
			name: "explicit zero request with a limit",
			res: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("0")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("1")},
			},
			wantShares: 2, wantQuota: 100000,
		},
		{
			name:       "request only: no quota",
			res:        v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("2")}},
			wantShares: 2048,
		},
		{
			name: "tiny cpu",
			res: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("1m")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("1m")},
			},
			wantShares: 2, wantQuota: 1000,
		},
		{
			name:       "sub-millicore limit rounds up to 1m",
			res:        v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("0.0001")}},
			wantShares: 2, wantQuota: 1000,
		},
		{
			name:       "memory in decimal units, no cpu",
			res:        v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("100M")}},
			wantShares: 2, wantMemory: 100000000,
		},
		{
			name:       "fractional memory rounds up to a byte",
			res:        v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("1500m")}},
			wantShares: 2, wantMemory: 2,
		},
		{
			name: "hugepages",
			res: v1.ResourceRequirements{
				Limits: v1.ResourceList{
					v1.ResourceMemory:          q("1Gi"),
					"hugepages-2Mi":            q("100Mi"),
					"hugepages-1Gi":            q("2Gi"),
					"hugepages-bogus":          q("1Gi"),
					"example.com/not-hugepage": q("1"),
				},
			},
			wantShares: 2, wantMemory: 1 << 30,
			wantHuge: map[string]uint64{"2MB": 100 << 20, "1GB": 2 << 30},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := linuxResources(&v1.Container{Name: "app", Resources: tt.res}, 0)
			if r.CpuShares != tt.wantShares || r.CpuQuota != tt.wantQuota || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != tt.wantMemory {
				t.Errorf("shares/quota/period/memory = %d/%d/%d/%d, want %d/%d/100000/%d",
					r.CpuShares, r.CpuQuota, r.CpuPeriod, r.MemoryLimitInBytes, tt.wantShares, tt.wantQuota, tt.wantMemory)
			}
			if r.OomScoreAdj != 0 {
				t.Errorf("oom score adj = %d, want it left to the runtime", r.OomScoreAdj)
			}
			if len(r.HugepageLimits) != len(tt.wantHuge) {
				t.Fatalf("hugepage limits = %v, want %v", r.HugepageLimits, tt.wantHuge)
			}
			var last string
			for i, hl := range r.HugepageLimits {
				if want, ok := tt.wantHuge[hl.PageSize]; !ok || hl.Limit != want {
					t.Errorf("hugepage limit %v, want %v", hl, tt.wantHuge)
				}
				if i > 0 && hl.PageSize == last {
					t.Errorf("page size %s listed twice", hl.PageSize)
				}
				last = hl.PageSize
			}
			if len(r.HugepageLimits) == 2 && r.HugepageLimits[0].PageSize != "2MB" {
				t.Errorf("hugepage limits %v not sorted by page size", r.HugepageLimits)
			}
		})
	}
}

// The resources reach the CRI config.
func TestContainerConfigResources(t *testing.T) {
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("32Mi")}
	})
	cfg, err := containerConfig(pod, &pod.Spec.Containers[0], containerOpts{ImageRef: "img-app"})
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.LinuxContainerResources{CpuShares: 204, CpuPeriod: 100000, CpuQuota: 20000, MemoryLimitInBytes: 32 << 20}
	if got := cfg.GetLinux().GetResources(); got.String() != want.String() {
		t.Errorf("resources = %v, want %v", got, want)
	}
}
