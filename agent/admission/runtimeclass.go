package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ReasonRuntimeClassUnavailable is the reason for a pod naming a
// RuntimeClass on a node that cannot read RuntimeClasses. The kubelet has
// none: standalone, it runs such a pod under the default handler, which
// DESIGN.md rule 9 forbids.
const ReasonRuntimeClassUnavailable = "RuntimeClassUnavailable"

// NoRuntimeClasses refuses every pod naming a spec.runtimeClassName: the
// handler of a standalone node, which has no apiserver to resolve the
// class to its runtime handler.
func NoRuntimeClasses() Handler {
	return func(pod *v1.Pod, _ []*v1.Pod) Result {
		if rc := pod.Spec.RuntimeClassName; rc != nil && *rc != "" {
			return Result{
				Reason: ReasonRuntimeClassUnavailable,
				Message: fmt.Sprintf("spec.runtimeClassName: RuntimeClass %q cannot be resolved to a runtime handler: a standalone node reads no RuntimeClasses "+
					"(remove the field to run the pod under the runtime's default handler, or run the node with --kubeconfig)", *rc),
			}
		}
		return Admitted
	}
}
