package apparmor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func profile(t v1.AppArmorProfileType, name string) *v1.AppArmorProfile {
	p := &v1.AppArmorProfile{Type: t}
	if name != "" {
		p.LocalhostProfile = &name
	}
	return p
}

// The container's field wins over its annotation, which wins over the
// pod's field, as with the kubelet; Required follows any non-Unconfined
// profile anywhere.
func TestProfileAndRequired(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "annotated": "localhost/k8s-deny-write",
			v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "both":      "runtime/default",
			v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "odd":       "something/else",
		}},
		Spec: v1.PodSpec{
			SecurityContext: &v1.PodSecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeUnconfined, "")},
			Containers: []v1.Container{
				{Name: "annotated"},
				{Name: "both", SecurityContext: &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeLocalhost, "mine")}},
				{Name: "plain"},
				{Name: "odd"},
			},
		},
	}
	for i, want := range []*v1.AppArmorProfile{
		profile(v1.AppArmorProfileTypeLocalhost, "k8s-deny-write"),
		profile(v1.AppArmorProfileTypeLocalhost, "mine"),
		profile(v1.AppArmorProfileTypeUnconfined, ""),
		profile(v1.AppArmorProfileTypeUnconfined, ""),
	} {
		c := &pod.Spec.Containers[i]
		got := Profile(pod, c)
		if got == nil || got.Type != want.Type || (want.LocalhostProfile != nil && (got.LocalhostProfile == nil || *got.LocalhostProfile != *want.LocalhostProfile)) {
			t.Errorf("container %s: %+v, want %+v", c.Name, got, want)
		}
	}
	if !Required(pod) {
		t.Errorf("pod with Localhost profiles not Required")
	}
	unconfined := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "a": "unconfined"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "a", SecurityContext: &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeUnconfined, "")}}}},
	}
	if Required(unconfined) || Required(&v1.Pod{}) {
		t.Errorf("an Unconfined or profile-less pod is Required")
	}
	init := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", SecurityContext: &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeRuntimeDefault, "")}}}}}
	if !Required(init) {
		t.Errorf("an init container's RuntimeDefault is not Required")
	}
}

func TestInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		p    *v1.AppArmorProfile
		want string
	}{
		"fine":         {profile(v1.AppArmorProfileTypeLocalhost, "x"), ""},
		"empty name":   {profile(v1.AppArmorProfileTypeLocalhost, " "), `invalid empty AppArmor profile name: container "c"`},
		"no name":      {profile(v1.AppArmorProfileTypeLocalhost, ""), `invalid empty AppArmor profile name: container "c"`},
		"unknown type": {profile("Strict", ""), `container "c": unknown AppArmor profile type "Strict"`},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", SecurityContext: &v1.SecurityContext{AppArmorProfile: tc.p}}}}}
		err := Invalid(pod)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// The host enforces AppArmor when the securityfs directory exists and the
// module says Y, as the kubelet reads it.
func TestHostSupport(t *testing.T) {
	sys := t.TempDir()
	if err := hostSupport(sys); err == nil || err.Error() != "AppArmor is not enabled on the host" {
		t.Errorf("empty /sys: %v", err)
	}
	for _, d := range []string{"kernel/security/apparmor", "module/apparmor/parameters"} {
		if err := os.MkdirAll(filepath.Join(sys, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	enabled := filepath.Join(sys, "module/apparmor/parameters/enabled")
	for content, ok := range map[string]bool{"N\n": false, "Y\n": true} {
		if err := os.WriteFile(enabled, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := hostSupport(sys); (err == nil) != ok {
			t.Errorf("enabled=%q: %v", content, err)
		}
	}
}
