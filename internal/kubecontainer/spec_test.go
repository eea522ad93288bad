package kubecontainer

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSpecOf(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Image: "i"}},
		Containers:     []v1.Container{{Name: "app", Image: "a"}},
		EphemeralContainers: []v1.EphemeralContainer{{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "d", TTY: true, Stdin: true},
			TargetContainerName:      "app",
		}},
	}}
	for _, tt := range []struct{ name, image string }{{"init", "i"}, {"app", "a"}, {"debug", "d"}} {
		if c := SpecOf(pod, tt.name); c == nil || c.Name != tt.name || c.Image != tt.image {
			t.Errorf("SpecOf(%q) = %+v", tt.name, c)
		}
	}
	if c := SpecOf(pod, "debug"); !c.TTY || !c.Stdin {
		t.Errorf("ephemeral container's fields lost in the conversion: %+v", c)
	}
	if c := SpecOf(pod, "nope"); c != nil {
		t.Errorf("SpecOf(nope) = %+v, want nil", c)
	}
}
