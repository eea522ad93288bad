package podworkers

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/events"
)

// runtimeClasses resolves a pod's runtimeClassName to its CRI runtime
// handler (node mode: agent/cluster/runtimeclass).
type runtimeClasses interface {
	// LookupRuntimeHandler returns the class's handler, "" for no class,
	// and the kubelet's errors for a class it cannot find.
	LookupRuntimeHandler(ctx context.Context, name *string) (string, error)
}

// runtimeHandler is the CRI runtime handler pod's sandbox is run with, as
// the kubelet resolves it before RunPodSandbox: "" (the runtime's
// default) without spec.runtimeClassName, else its RuntimeClass's
// handler. A class that cannot be resolved fails the sandbox: a
// FailedCreatePodSandBox event, and the error, which keeps the pod's
// containers waiting. Without a resolver (standalone) admission refused
// every pod naming a class; one that gets here is refused again.
func (s *Syncer) runtimeHandler(ctx context.Context, pod *v1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return "", nil
	}
	var handler string
	var err error
	if s.cfg.RuntimeClasses == nil {
		err = fmt.Errorf("spec.runtimeClassName: RuntimeClass %q cannot be resolved: a standalone node reads no RuntimeClasses", *name)
	} else {
		handler, err = s.cfg.RuntimeClasses.LookupRuntimeHandler(ctx, name)
	}
	if err != nil {
		s.podEvent(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
		return "", err
	}
	return handler, nil
}
