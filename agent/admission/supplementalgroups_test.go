package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Strict is refused, with the kubelet's reason and message, only where the
// runtime does not support it; Merge and no policy always pass.
func TestSupplementalGroupsPolicy(t *testing.T) {
	pod := func(p v1.SupplementalGroupsPolicy) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroupsPolicy: &p}}}
	}
	unsupported, supported := SupplementalGroupsPolicy(false), SupplementalGroupsPolicy(true)
	r := unsupported(pod(v1.SupplementalGroupsPolicyStrict), nil)
	if r.Admit || r.Reason != "SupplementalGroupsPolicyNotSupported" || r.Message != "SupplementalGroupsPolicy=Strict is not supported in this node" {
		t.Errorf("Strict without support: %+v", r)
	}
	for name, ok := range map[string]bool{
		"Strict with support":  supported(pod(v1.SupplementalGroupsPolicyStrict), nil).Admit,
		"Merge without":        unsupported(pod(v1.SupplementalGroupsPolicyMerge), nil).Admit,
		"no policy without":    unsupported(&v1.Pod{}, nil).Admit,
		"no context, no field": unsupported(&v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{}}}, nil).Admit,
	} {
		if !ok {
			t.Errorf("%s: refused", name)
		}
	}
}
