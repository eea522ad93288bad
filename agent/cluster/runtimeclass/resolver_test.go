package runtimeclass

import (
	"context"
	"errors"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// A class resolves to its handler; none to the default handler without a
// request; an unknown class to the kubelet's NotFound; other failures are
// wrapped as the kubelet words them.
func TestLookupRuntimeHandler(t *testing.T) {
	client := fake.NewClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	r := New(client.NodeV1().RuntimeClasses())
	ctx := context.Background()
	if h, err := r.LookupRuntimeHandler(ctx, ptr.To("gvisor")); h != "runsc" || err != nil {
		t.Errorf("gvisor: %q %v", h, err)
	}
	before := len(client.Actions())
	for _, name := range []*string{nil, ptr.To("")} {
		if h, err := r.LookupRuntimeHandler(ctx, name); h != "" || err != nil {
			t.Errorf("no class: %q %v", h, err)
		}
	}
	if len(client.Actions()) != before {
		t.Errorf("a pod without a class asked the apiserver")
	}
	if _, err := r.LookupRuntimeHandler(ctx, ptr.To("kata")); err == nil || err.Error() != `runtimeclass.node.k8s.io "kata" not found` {
		t.Errorf("unknown class: %v", err)
	}
	client.PrependReactor("get", "runtimeclasses", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if _, err := r.LookupRuntimeHandler(ctx, ptr.To("gvisor")); err == nil || err.Error() != "failed to lookup RuntimeClass gvisor: connection refused" {
		t.Errorf("apiserver down: %v", err)
	}
}
