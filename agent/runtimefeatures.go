package agent

import (
	"context"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/internal/crilog"
	"github.com/minikubelet/minikubelet/internal/userns"
)

// runtimeFeatures asks the runtime once, at start, what it supports (CRI
// status: user namespaces per handler, supplementalGroupsPolicy), as the
// kubelet reads it; a runtime that cannot say supports none of it.
func runtimeFeatures(ctx context.Context, rt cri.StatusReader) cri.Features {
	f, err := cri.ReadFeatures(crilog.QuietErrors(ctx), rt)
	if err != nil {
		klog.FromContext(ctx).Info("Could not ask the runtime what it supports; pods asking for user namespaces or supplementalGroupsPolicy Strict are refused", "err", err)
		return cri.Features{}
	}
	userns, _ := f.HandlerSupportsUserNamespaces("")
	klog.FromContext(ctx).Info("Runtime features", "userNamespaces", userns, "supplementalGroupsPolicy", f.SupplementalGroupsPolicy, "handlers", len(f.Handlers))
	return f
}

// newUserNamespaces is the manager of the ID ranges of pods with
// hostUsers: false, with the ranges its pods' directories record. Nil when
// a recorded range cannot be read: handing ranges out again could share
// IDs between pods, so such pods then do not start (their sandbox fails
// with the cause).
func newUserNamespaces(ctx context.Context, rootDir string) *userns.Manager {
	m, err := userns.New(filepath.Join(rootDir, "pods"))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pods with hostUsers: false will not start until the user namespace file is fixed or its pod removed")
		return nil
	}
	return m
}

// nodeFeatures is what the Node's status says of the runtime's features:
// status.features (when the runtime reports them) and
// status.runtimeHandlers, the default handler first.
func nodeFeatures(f cri.Features) (*v1.NodeFeatures, []v1.NodeRuntimeHandler) {
	var features *v1.NodeFeatures
	if f.Reported {
		sgp := f.SupplementalGroupsPolicy
		features = &v1.NodeFeatures{SupplementalGroupsPolicy: &sgp}
	}
	names := make([]string, 0, len(f.Handlers))
	for name := range f.Handlers {
		names = append(names, name)
	}
	slices.Sort(names)
	var handlers []v1.NodeRuntimeHandler
	for _, name := range names {
		h := f.Handlers[name]
		handlers = append(handlers, v1.NodeRuntimeHandler{Name: name, Features: &v1.NodeRuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: &h.RecursiveReadOnlyMounts,
			UserNamespaces:          &h.UserNamespaces,
		}})
	}
	return features, handlers
}
