package cri

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What a runtime says in its status, per handler and as a whole; a runtime
// that says nothing supports nothing.
func TestFeaturesOf(t *testing.T) {
	f := FeaturesOf(&runtimeapi.StatusResponse{
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{
			{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true, RecursiveReadOnlyMounts: true}},
			{Name: "runc"},
		},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	})
	if !f.Reported || !f.SupplementalGroupsPolicy || f.UserNamespacesHostNetwork || len(f.Handlers) != 2 {
		t.Errorf("features = %+v", f)
	}
	for handler, want := range map[string]bool{"": true, "runc": false} {
		if ok, err := f.HandlerSupportsUserNamespaces(handler); ok != want || err != nil {
			t.Errorf("handler %q: %v %v, want %v", handler, ok, err, want)
		}
	}
	if _, err := f.HandlerSupportsUserNamespaces("kata"); err == nil || err.Error() != `the handler "kata" is not known` {
		t.Errorf("unknown handler: %v", err)
	}
	old := FeaturesOf(&runtimeapi.StatusResponse{})
	if ok, err := old.HandlerSupportsUserNamespaces(""); ok || err != nil || old.SupplementalGroupsPolicy || old.Reported {
		t.Errorf("a runtime that says nothing: %+v %v %v", old, ok, err)
	}
}
