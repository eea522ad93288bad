package podworkers

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// supplementalGroupsPolicy reaches the sandbox and every container; none
// is Merge.
func TestSupplementalGroupsPolicyReachesCRI(t *testing.T) {
	s := NewSyncer(SyncerConfig{PodLogsDir: "/var/log/pods"})
	for policy, want := range map[string]runtimeapi.SupplementalGroupsPolicy{
		"":       runtimeapi.SupplementalGroupsPolicy_Merge,
		"Merge":  runtimeapi.SupplementalGroupsPolicy_Merge,
		"Strict": runtimeapi.SupplementalGroupsPolicy_Strict,
	} {
		pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroups: []int64{5}}
			if policy != "" {
				p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr.To(v1.SupplementalGroupsPolicy(policy))
			}
		})
		if got := s.sandboxConfig(pod, 0).GetLinux().GetSecurityContext().GetSupplementalGroupsPolicy(); got != want {
			t.Errorf("policy %q: sandbox %v, want %v", policy, got, want)
		}
		sc, err := linuxSecurityContext(pod, &pod.Spec.Containers[0], imageUser{}, "/seccomp")
		if err != nil {
			t.Fatal(err)
		}
		if sc.GetSupplementalGroupsPolicy() != want {
			t.Errorf("policy %q: container %v, want %v", policy, sc.GetSupplementalGroupsPolicy(), want)
		}
	}
}
