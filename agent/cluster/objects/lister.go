package objects

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// listerGet returns namespace/name of type T from an informer's store, or
// a NotFound error of resource gr.
func listerGet[T any](inf cache.SharedIndexInformer, namespace, name string, gr schema.GroupResource) (T, error) {
	var zero T
	obj, ok, err := inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return zero, fmt.Errorf("read %s %s/%s from the cache: %w", gr, namespace, name, err)
	}
	if !ok {
		return zero, apierrors.NewNotFound(gr, name)
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("cache of %s holds a %T", gr, obj)
	}
	return t, nil
}
