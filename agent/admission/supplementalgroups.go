package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ReasonSupplementalGroupsPolicyNotSupported is the kubelet's reason for a
// pod asking for supplementalGroupsPolicy: Strict on a node whose runtime
// cannot honour it.
const ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"

// SupplementalGroupsPolicy refuses, as the kubelet's predicate does, a pod
// with spec.securityContext.supplementalGroupsPolicy Strict when the
// runtime does not report the SupplementalGroupsPolicy feature in its CRI
// status (supported false): it would merge the image's groups in. Merge,
// the default, needs no support.
func SupplementalGroupsPolicy(supported bool) Handler {
	return func(pod *v1.Pod, _ []*v1.Pod) Result {
		sc := pod.Spec.SecurityContext
		if supported || sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
			return Admitted
		}
		return Result{
			Reason:  ReasonSupplementalGroupsPolicyNotSupported,
			Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict),
		}
	}
}
