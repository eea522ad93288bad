package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A standalone node refuses a pod naming a RuntimeClass, saying which field
// and why; pods without one pass.
func TestNoRuntimeClasses(t *testing.T) {
	h := NoRuntimeClasses()
	gvisor, empty := "gvisor", ""
	r := h(&v1.Pod{Spec: v1.PodSpec{RuntimeClassName: &gvisor}}, nil)
	want := `spec.runtimeClassName: RuntimeClass "gvisor" cannot be resolved to a runtime handler: a standalone node reads no RuntimeClasses`
	if r.Admit || r.Reason != "RuntimeClassUnavailable" || len(r.Message) < len(want) || r.Message[:len(want)] != want {
		t.Errorf("refusal = %+v", r)
	}
	for _, p := range []*v1.Pod{{}, {Spec: v1.PodSpec{RuntimeClassName: &empty}}} {
		if !h(p, nil).Admit {
			t.Errorf("a pod without a class refused")
		}
	}
}
