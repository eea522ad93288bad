package podconfig

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// ConflictError is a pod the Merger refuses because an admitted pod has its
// namespace and name: two pods of one full name cannot both run (their
// logs, their mirror pods and the node's API all name a pod by it). The
// first one seen keeps running. The refused pod is admitted once the kept
// one is gone.
type ConflictError struct {
	// Pod is the full name, namespace/name, both pods have.
	Pod string
	// Source, Origin and UID identify the refused pod.
	Source string
	Origin string
	UID    types.UID
	// KeptSource, KeptOrigin and KeptUID identify the pod that keeps
	// running.
	KeptSource string
	KeptOrigin string
	KeptUID    types.UID
}

// Error names the pod and both origins, for example `default/web-node1 from
// http http://x/pods conflicts with the same pod from file
// /etc/kubernetes/manifests/web.yaml; keeping the first: give each pod its
// own name or namespace`. A source that names no origin is named by the
// pod's UID.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s from %s conflicts with the same pod from %s; keeping the first: give each pod its own name or namespace",
		e.Pod, where(e.Source, e.Origin, e.UID), where(e.KeptSource, e.KeptOrigin, e.KeptUID))
}

func where(source, origin string, uid types.UID) string {
	if origin == "" {
		return fmt.Sprintf("%s (UID %s)", source, uid)
	}
	return source + " " + origin
}
