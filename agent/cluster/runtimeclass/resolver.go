package runtimeclass

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// getter reads one RuntimeClass (client-go's RuntimeClassInterface).
type getter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*nodev1.RuntimeClass, error)
}

// Resolver turns RuntimeClass names into runtime handlers. Safe for
// concurrent use.
type Resolver struct {
	classes getter
}

// New returns a Resolver reading RuntimeClasses through classes.
func New(classes getter) *Resolver { return &Resolver{classes: classes} }

// LookupRuntimeHandler returns the handler of the RuntimeClass name, ""
// (the runtime's default handler) for none, as the kubelet's
// runtimeclass manager does: a class the apiserver does not have is the
// kubelet's NotFound error ("runtimeclass.node.k8s.io \"x\" not found"),
// any other failure "failed to lookup RuntimeClass x: ...".
func (r *Resolver) LookupRuntimeHandler(ctx context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	rc, err := r.classes.Get(ctx, *name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", apierrors.NewNotFound(schema.GroupResource{Group: nodev1.GroupName, Resource: "runtimeclass"}, *name)
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", *name, err)
	}
	return rc.Handler, nil
}
