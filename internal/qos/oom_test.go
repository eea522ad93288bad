package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
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

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30 // 10Gi
	critical := podOf(nil, ctr("a", nil, nil))
	critical.Spec.PriorityClassName = "system-node-critical"
	critical.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	apiCritical := critical.DeepCopy()
	apiCritical.Annotations["kubernetes.io/config.source"] = "api"
	withSidecar := podOf([]v1.Container{sidecar("s", res("", "10Mi"), nil)}, ctr("a", res("", "1Gi"), nil))
	tests := []struct {
		name     string
		pod      *v1.Pod
		c        string
		capacity int64
		want     int
	}{
		{"guaranteed", podOf(nil, ctr("a", nil, res("1", "1Gi"))), "a", capacity, -997},
		{"besteffort", podOf(nil, ctr("a", nil, nil)), "a", capacity, 1000},
		{"static node-critical", critical, "a", capacity, -997},
		{"node-critical class without critical priority from the API", apiCritical, "a", capacity, 1000},
		{"burstable requesting 10%", podOf(nil, ctr("a", res("", "1Gi"), nil)), "a", capacity, 900},
		{"burstable requesting nothing", podOf(nil, ctr("a", res("100m", ""), nil), ctr("b", res("", "1Gi"), nil)), "a", capacity, 999},
		{"burstable requesting everything", podOf(nil, ctr("a", res("", "10Gi"), nil)), "a", capacity, 3},
		{"burstable without a capacity", podOf(nil, ctr("a", res("", "1Gi"), nil)), "a", 0, 999},
		{"sidecar no above the least regular container", withSidecar, "s", capacity, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := kubecontainer.SpecOf(tt.pod, tt.c)
			if got := OOMScoreAdj(tt.pod, c, tt.capacity); got != tt.want {
				t.Errorf("OOMScoreAdj = %d, want %d", got, tt.want)
			}
		})
	}
}
