package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30 // 10Gi
	critical := pod(nil, ctr("a", "", ""))
	critical.Spec.PriorityClassName = "system-node-critical"
	critical.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	apiCritical := critical.DeepCopy()
	apiCritical.Annotations["kubernetes.io/config.source"] = "api"
	withSidecar := pod([]v1.Container{sidecar("s", "memory=10Mi", "")}, ctr("a", "memory=1Gi", ""))
	tests := []struct {
		name     string
		pod      *v1.Pod
		c        string
		capacity int64
		want     int
	}{
		{"guaranteed", pod(nil, ctr("a", "", "cpu=1 memory=1Gi")), "a", capacity, -997},
		{"besteffort", pod(nil, ctr("a", "", "")), "a", capacity, 1000},
		{"static node-critical", critical, "a", capacity, -997},
		{"node-critical class without critical priority from the API", apiCritical, "a", capacity, 1000},
		{"burstable requesting 10%", pod(nil, ctr("a", "memory=1Gi", "")), "a", capacity, 900},
		{"burstable requesting nothing", pod(nil, ctr("a", "cpu=100m", ""), ctr("b", "memory=1Gi", "")), "a", capacity, 999},
		{"burstable requesting everything", pod(nil, ctr("a", "memory=10Gi", "")), "a", capacity, 3},
		{"burstable without a capacity", pod(nil, ctr("a", "memory=1Gi", "")), "a", 0, 999},
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
