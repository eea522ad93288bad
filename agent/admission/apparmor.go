package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/apparmor"
)

// ReasonAppArmor is the kubelet's reason for a pod whose AppArmor profiles
// the node cannot enforce.
const ReasonAppArmor = "AppArmor"

// AppArmor refuses, as the kubelet's AppArmor admit handler does, a pod
// that asks for an AppArmor profile other than Unconfined (a field, or a
// deprecated container.apparmor.security.beta.kubernetes.io annotation)
// when hostErr says the host cannot enforce AppArmor
// (apparmor.HostSupport), or that asks for a Localhost profile without a
// name. A pod already past Pending (the agent restarted beside it) is not
// checked again.
func AppArmor(hostErr error) Handler {
	return func(pod *v1.Pod, _ []*v1.Pod) Result {
		if p := pod.Status.Phase; p != "" && p != v1.PodPending {
			return Admitted
		}
		if !apparmor.Required(pod) {
			return Admitted
		}
		err := hostErr
		if err == nil {
			err = apparmor.Invalid(pod)
		}
		if err == nil {
			return Admitted
		}
		return Result{Reason: ReasonAppArmor, Message: fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
	}
}
