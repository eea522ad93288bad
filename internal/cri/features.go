package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Features are what the runtime says it supports in its CRI status, as the
// kubelet reads them: per runtime handler, and for the runtime as a whole.
// A runtime that says nothing (containerd 1.6) supports none of them.
type Features struct {
	// Handlers are the runtime handlers by name ("" is the default
	// handler); nil when the runtime does not list them.
	Handlers map[string]HandlerFeatures
	// SupplementalGroupsPolicy: the runtime honours
	// supplementalGroupsPolicy and reports each container's user.
	SupplementalGroupsPolicy bool
	// UserNamespacesHostNetwork: a pod on the host's network may have a
	// user namespace.
	UserNamespacesHostNetwork bool
	// Reported: the runtime sent its runtime-wide features at all (the
	// Node's status.features are left out otherwise, as by the kubelet).
	Reported bool
}

// HandlerFeatures are what one runtime handler supports.
type HandlerFeatures struct {
	// UserNamespaces: user namespaces and idmap mounts, as Kubernetes
	// uses them for hostUsers: false.
	UserNamespaces bool
	// RecursiveReadOnlyMounts: recursive read-only mounts.
	RecursiveReadOnlyMounts bool
}

// HandlerSupportsUserNamespaces is the kubelet's check of a runtime
// handler ("" for the default) before it gives a pod a user namespace:
// false when the runtime lists no handlers, an error when it lists others
// but not this one.
func (f Features) HandlerSupportsUserNamespaces(handler string) (bool, error) {
	if len(f.Handlers) == 0 {
		return false, nil
	}
	h, ok := f.Handlers[handler]
	if !ok {
		return false, fmt.Errorf("the handler %q is not known", handler)
	}
	return h.UserNamespaces, nil
}

// StatusReader is the CRI call that reports the features.
type StatusReader interface {
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// ReadFeatures asks the runtime for its status and returns what it says it
// supports.
func ReadFeatures(ctx context.Context, rt StatusReader) (Features, error) {
	resp, err := rt.Status(ctx, false)
	if err != nil {
		return Features{}, fmt.Errorf("runtime status: %w", err)
	}
	return FeaturesOf(resp), nil
}

// FeaturesOf reads the features from a CRI status answer.
func FeaturesOf(resp *runtimeapi.StatusResponse) Features {
	var f Features
	for _, h := range resp.GetRuntimeHandlers() {
		if f.Handlers == nil {
			f.Handlers = map[string]HandlerFeatures{}
		}
		f.Handlers[h.GetName()] = HandlerFeatures{
			UserNamespaces:          h.GetFeatures().GetUserNamespaces(),
			RecursiveReadOnlyMounts: h.GetFeatures().GetRecursiveReadOnlyMounts(),
		}
	}
	f.Reported = resp.GetFeatures() != nil
	f.SupplementalGroupsPolicy = resp.GetFeatures().GetSupplementalGroupsPolicy()
	f.UserNamespacesHostNetwork = resp.GetFeatures().GetUserNamespacesHostNetwork()
	return f
}
