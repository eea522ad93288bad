package manifest

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResizePolicy checks a container's resizePolicy as the API server
// does: cpu and memory at most once each, each NotRequired or
// RestartContainer, and only NotRequired in a pod whose restartPolicy is
// Never or in an init container that is not a sidecar (which is never
// resized). A manifest edit of a static pod's resources is an in-place
// resize that honours it (podworkers), so a policy the agent cannot
// honour is refused rather than ignored.
func validateResizePolicy(policies []v1.ContainerResizePolicy, scope containerScope, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[v1.ResourceName]bool{}
	for i, p := range policies {
		idx := path.Index(i)
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(idx.Child("resourceName"), p.ResourceName))
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case v1.ResourceCPU, v1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(idx.Child("resourceName"), ""))
		default:
			errs = append(errs, field.NotSupported(idx.Child("resourceName"), p.ResourceName, []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case v1.NotRequired, v1.RestartContainer:
		case "":
			errs = append(errs, field.Required(idx.Child("restartPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(idx.Child("restartPolicy"), p.RestartPolicy, []v1.ResourceResizeRestartPolicy{v1.NotRequired, v1.RestartContainer}))
		}
		switch {
		case p.RestartPolicy != v1.RestartContainer:
		case scope.init && !scope.sidecar:
			errs = append(errs, field.Invalid(idx.Child("restartPolicy"), p.RestartPolicy, "must not be set to 'RestartContainer' for non-sidecar initContainers"))
		case scope.podRestartPolicy == v1.RestartPolicyNever:
			errs = append(errs, field.Invalid(idx.Child("restartPolicy"), p.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}
