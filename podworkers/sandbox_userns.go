package podworkers

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/events"
)

// userNamespaces hands out pods' user namespace ID ranges
// (internal/userns.Manager).
type userNamespaces interface {
	// Mappings returns the pod's user namespace, taking a range for it
	// if it has none.
	Mappings(uid types.UID) (*runtimeapi.UserNamespace, error)
	// Release frees the pod's range once it is gone.
	Release(uid types.UID)
}

// usernsSupport says whether a runtime handler ("" for the default) can
// give a pod a user namespace (cri.Features.HandlerSupportsUserNamespaces).
type usernsSupport func(handler string) (bool, error)

// hostUsersFalse reports whether pod asks for a user namespace of its own.
func hostUsersFalse(pod *v1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// userNamespace is the user namespace of pod's sandbox and containers, as
// the kubelet's user namespace manager makes it: nil (the host's) unless
// the pod has hostUsers: false; then, when a sandbox is about to be made
// (newSandbox) with handler, only if the runtime handler supports user
// namespaces, with the kubelet's message otherwise, a
// FailedCreatePodSandBox event, and no sandbox: the pod never runs with
// the host's users. The pod's ID range is taken the first time and kept.
func (s *Syncer) userNamespace(pod *v1.Pod, handler string, newSandbox bool) (*runtimeapi.UserNamespace, error) {
	if !hostUsersFalse(pod) {
		return nil, nil
	}
	ns, err := s.userNamespaceOf(pod, handler, newSandbox)
	if err != nil && newSandbox {
		s.podEvent(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
	}
	return ns, err
}

func (s *Syncer) userNamespaceOf(pod *v1.Pod, handler string, newSandbox bool) (*runtimeapi.UserNamespace, error) {
	if newSandbox {
		var ok bool
		var err error
		if s.cfg.UsernsSupport != nil {
			ok, err = s.cfg.UsernsSupport(handler)
		}
		if err != nil || !ok {
			msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
			if handler != "" {
				msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", msg, err)
			}
			return nil, fmt.Errorf("%s", msg)
		}
	}
	if s.cfg.UserNamespaces == nil {
		return nil, fmt.Errorf("can't set `spec.hostUsers: false`: the agent hands out no user namespaces")
	}
	return s.cfg.UserNamespaces.Mappings(pod.UID)
}

// releaseUserNamespace frees the pod's ID range once it is gone.
func (s *Syncer) releaseUserNamespace(uid types.UID) {
	if s.cfg.UserNamespaces != nil {
		s.cfg.UserNamespaces.Release(uid)
	}
}
