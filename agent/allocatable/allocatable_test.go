package allocatable

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestParseReserved(t *testing.T) {
	got, err := ParseReserved(map[string]string{"cpu": "200m", "memory": "1Gi", "ephemeral-storage": "10Gi", "pid": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Cpu().MilliValue() != 200 || got.Memory().Value() != 1<<30 || got.StorageEphemeral().Value() != 10<<30 || got.Name(ResourcePID, resource.DecimalSI).Value() != 1000 {
		t.Errorf("reserved %v", got)
	}
	_, err = ParseReserved(map[string]string{"gpu": "1", "memory": "-1Gi", "cpu": "lots"})
	for _, w := range []string{`"gpu" cannot be reserved`, `memory: "-1Gi" is not a quantity`, `cpu: "lots"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
}

// Allocatable is capacity less both reservations and the hard eviction
// thresholds; the pods cgroup gets capacity less the reservations only.
func TestAllocatable(t *testing.T) {
	hard, err := eviction.ParseThresholds(eviction.ThresholdSettings{Hard: eviction.DefaultHard()})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{
		Capacity:       v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("8Gi"), v1.ResourceEphemeralStorage: q("100Gi"), ResourcePID: q("32768")},
		KubeReserved:   v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("512Mi")},
		SystemReserved: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("512Mi"), v1.ResourceEphemeralStorage: q("10Gi"), ResourcePID: q("1000")},
		HardEviction:   hard,
	}
	a := c.Allocatable()
	if a.Cpu().MilliValue() != 1800 {
		t.Errorf("cpu %s, want 1800m", a.Cpu())
	}
	if want := int64(8<<30 - 1<<30 - 100<<20); a.Memory().Value() != want {
		t.Errorf("memory %d, want 8Gi - 1Gi - 100Mi = %d", a.Memory().Value(), want)
	}
	// 10% of 100Gi as a float32, as the kubelet computes it.
	if e := a.StorageEphemeral().Value(); e < 80<<30-1<<20 || e > 80<<30+1<<20 {
		t.Errorf("ephemeral-storage %d, want about 100Gi - 10Gi - 10%%", e)
	}
	if _, ok := a[ResourcePID]; ok {
		t.Error("the Node's allocatable has pid")
	}
	p := c.PodsLimits(true)
	if p.Cpu().MilliValue() != 1800 || p.Memory().Value() != 7<<30 || p.Name(ResourcePID, resource.DecimalSI).Value() != 31768 {
		t.Errorf("pods limits %v, want cpu 1800m, memory 7Gi, pid 31768", p)
	}
	if p := c.PodsLimits(false); len(p) != 1 || p.Cpu().Value() != 2 {
		t.Errorf("pods limits unenforced %v, want the cpu capacity only", p)
	}
	// Reservations above capacity leave nothing, not less.
	c.KubeReserved[v1.ResourceMemory] = q("100Gi")
	if a := c.Allocatable(); a.Memory().Sign() != 0 {
		t.Errorf("memory %s, want 0", a.Memory())
	}
}

func podRequesting(name string, rl v1.ResourceList) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl}}}}}
}

func TestFit(t *testing.T) {
	fit := Fit(v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("1Gi"), v1.ResourceEphemeralStorage: q("10Gi")})
	others := []*v1.Pod{podRequesting("a", v1.ResourceList{v1.ResourceCPU: q("1500m"), v1.ResourceMemory: q("512Mi")})}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		reason string
		msg    string
	}{
		{"nothing requested", podRequesting("p", nil), "", ""},
		{"fits", podRequesting("p", v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("512Mi")}), "", ""},
		{"cpu", podRequesting("p", v1.ResourceList{v1.ResourceCPU: q("501m"), v1.ResourceMemory: q("2Gi")}), OutOfCPU,
			"Node didn't have enough resource: cpu, requested: 501, used: 1500, capacity: 2000"},
		{"memory", podRequesting("p", v1.ResourceList{v1.ResourceMemory: q("513Mi")}), OutOfMemory,
			"Node didn't have enough resource: memory, requested: 537919488, used: 536870912, capacity: 1073741824"},
		{"ephemeral-storage", podRequesting("p", v1.ResourceList{v1.ResourceEphemeralStorage: q("11Gi")}), OutOfEphemeralStorage,
			"Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := fit(tc.pod, others)
			if ok != (tc.reason == "") || reason != tc.reason || msg != tc.msg {
				t.Errorf("Fit = %v %q %q, want %q %q", ok, reason, msg, tc.reason, tc.msg)
			}
		})
	}
}
