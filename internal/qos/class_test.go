package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestClass(t *testing.T) {
	res := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	pod := func(cs ...v1.ResourceRequirements) *v1.Pod {
		p := &v1.Pod{}
		for _, r := range cs {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Resources: r})
		}
		return p
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"nothing set", pod(v1.ResourceRequirements{}), v1.PodQOSBestEffort},
		{"zero quantities", pod(v1.ResourceRequirements{Requests: res("0", "0")}), v1.PodQOSBestEffort},
		{"limits only", pod(v1.ResourceRequirements{Limits: res("1", "1Gi")}), v1.PodQOSGuaranteed},
		{"requests equal limits", pod(v1.ResourceRequirements{Requests: res("500m", "1Gi"), Limits: res("0.5", "1Gi")}), v1.PodQOSGuaranteed},
		{"requests below limits", pod(v1.ResourceRequirements{Requests: res("100m", "1Gi"), Limits: res("1", "1Gi")}), v1.PodQOSBurstable},
		{"memory limit only", pod(v1.ResourceRequirements{Limits: res("", "1Gi")}), v1.PodQOSBurstable},
		{"one guaranteed one besteffort", pod(v1.ResourceRequirements{Limits: res("1", "1Gi")}, v1.ResourceRequirements{}), v1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.pod); got != tt.want {
				t.Errorf("Class = %s, want %s", got, tt.want)
			}
		})
	}
}
