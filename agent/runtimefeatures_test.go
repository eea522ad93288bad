package agent

import (
	"testing"

	"github.com/minikubelet/minikubelet/internal/cri"
)

// The Node reports what the runtime supports as the kubelet does: the
// features only when the runtime sent them, the handlers by name.
func TestNodeFeatures(t *testing.T) {
	f, h := nodeFeatures(cri.Features{})
	if f != nil || h != nil {
		t.Errorf("a runtime that says nothing: %+v %+v", f, h)
	}
	f, h = nodeFeatures(cri.Features{Reported: true, SupplementalGroupsPolicy: true, Handlers: map[string]cri.HandlerFeatures{
		"runc": {}, "": {UserNamespaces: true, RecursiveReadOnlyMounts: true},
	}})
	if f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy {
		t.Errorf("features = %+v", f)
	}
	if len(h) != 2 || h[0].Name != "" || !*h[0].Features.UserNamespaces || !*h[0].Features.RecursiveReadOnlyMounts || h[1].Name != "runc" || *h[1].Features.UserNamespaces {
		t.Errorf("handlers = %+v", h)
	}
}
