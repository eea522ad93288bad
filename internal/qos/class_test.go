package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestClass(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"nothing set", pod(nil, ctr("c", "", "")), v1.PodQOSBestEffort},
		{"zero quantities", pod(nil, ctr("c", "cpu=0 memory=0", "")), v1.PodQOSBestEffort},
		{"limits only", pod(nil, ctr("c", "", "cpu=1 memory=1Gi")), v1.PodQOSGuaranteed},
		{"requests equal limits", pod(nil, ctr("c", "cpu=500m memory=1Gi", "cpu=0.5 memory=1Gi")), v1.PodQOSGuaranteed},
		{"requests below limits", pod(nil, ctr("c", "cpu=100m memory=1Gi", "cpu=1 memory=1Gi")), v1.PodQOSBurstable},
		{"memory limit only", pod(nil, ctr("c", "", "memory=1Gi")), v1.PodQOSBurstable},
		{"one guaranteed one besteffort", pod(nil, ctr("a", "", "cpu=1 memory=1Gi"), ctr("b", "", "")), v1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.pod); got != tt.want {
				t.Errorf("Class = %s, want %s", got, tt.want)
			}
		})
	}
}
