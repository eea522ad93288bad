package podworkers

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// A container's AppArmor profile reaches CRI in the field and in the
// deprecated string, as the kubelet sends them: the container's own, else
// its annotation, else the pod's; none leaves the runtime's default.
func TestAppArmorReachesCRI(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotation  string
		pod, ctr    *v1.AppArmorProfile
		want        *runtimeapi.SecurityProfile
		wantProfile string
	}{
		{name: "none"},
		{name: "pod RuntimeDefault", pod: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault},
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, wantProfile: "runtime/default"},
		{name: "container Localhost over the pod's", pod: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault},
			ctr:  &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-deny-write")},
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny-write"}, wantProfile: "localhost/k8s-deny-write"},
		{name: "annotation over the pod's", annotation: "unconfined", pod: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault},
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, wantProfile: "unconfined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: tc.pod}
				if tc.ctr != nil {
					p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: tc.ctr}
				}
				if tc.annotation != "" {
					p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app": tc.annotation}
				}
			})
			sc, err := linuxSecurityContext(pod, &pod.Spec.Containers[0], imageUser{}, "/seccomp")
			if err != nil {
				t.Fatal(err)
			}
			profile := sc.ApparmorProfile //nolint:staticcheck // SA1019: the deprecated field is sent too
			if sc.Apparmor.String() != tc.want.String() || profile != tc.wantProfile {
				t.Errorf("apparmor = %v %q, want %v %q", sc.Apparmor, profile, tc.want, tc.wantProfile)
			}
		})
	}
}
