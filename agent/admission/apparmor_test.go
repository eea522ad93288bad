package admission

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// On a host without AppArmor a pod asking for a profile is refused with the
// kubelet's reason and message; Unconfined, no profile, or a pod already
// running pass; on a host with AppArmor only an empty Localhost name is
// refused.
func TestAppArmor(t *testing.T) {
	off := AppArmor(errors.New("AppArmor is not enabled on the host"))
	on := AppArmor(nil)
	withProfile := func(tp v1.AppArmorProfileType, name string) *v1.Pod {
		p := &v1.AppArmorProfile{Type: tp}
		if tp == v1.AppArmorProfileTypeLocalhost {
			p.LocalhostProfile = &name
		}
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{AppArmorProfile: p}, Containers: []v1.Container{{Name: "c"}}}}
	}
	annotated := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	running := withProfile(v1.AppArmorProfileTypeRuntimeDefault, "")
	running.Status.Phase = v1.PodRunning

	for name, tc := range map[string]struct {
		h    Handler
		pod  *v1.Pod
		want string
	}{
		"off, RuntimeDefault": {off, withProfile(v1.AppArmorProfileTypeRuntimeDefault, ""), "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		"off, annotation":     {off, annotated, "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		"off, Unconfined":     {off, withProfile(v1.AppArmorProfileTypeUnconfined, ""), ""},
		"off, none":           {off, &v1.Pod{}, ""},
		"off, running":        {off, running, ""},
		"on, Localhost":       {on, withProfile(v1.AppArmorProfileTypeLocalhost, "p"), ""},
		"on, empty Localhost": {on, withProfile(v1.AppArmorProfileTypeLocalhost, ""), `Cannot enforce AppArmor: invalid empty AppArmor profile name: container "c"`},
	} {
		r := tc.h(tc.pod, nil)
		if tc.want == "" {
			if !r.Admit {
				t.Errorf("%s: refused %+v", name, r)
			}
			continue
		}
		if r.Admit || r.Reason != "AppArmor" || len(r.Message) < len(tc.want) || r.Message[:len(tc.want)] != tc.want {
			t.Errorf("%s: %+v, want AppArmor %q", name, r, tc.want)
		}
	}
}
