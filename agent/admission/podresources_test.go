package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A pod setting pod-level resources is refused, naming the field; pods
// without them, or with an empty spec.resources, pass.
func TestNoPodLevelResources(t *testing.T) {
	h := NoPodLevelResources()
	for name, r := range map[string]*v1.ResourceRequirements{
		"limits":   {Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
		"requests": {Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
	} {
		res := h(&v1.Pod{Spec: v1.PodSpec{Resources: r}}, nil)
		if res.Admit || res.Reason != ReasonPodLevelResources || !strings.HasPrefix(res.Message, "spec.resources: ") {
			t.Errorf("%s: %+v", name, res)
		}
	}
	for _, p := range []*v1.Pod{{}, {Spec: v1.PodSpec{Resources: &v1.ResourceRequirements{}}}} {
		if !h(p, nil).Admit {
			t.Errorf("pod %+v refused", p.Spec.Resources)
		}
	}
}
