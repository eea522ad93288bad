package manifest

import (
	"fmt"
	"regexp"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// sysctlName is a sysctl name as the API server validates it, dots or
// slashes as separators.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// maxSysctlName is the API server's longest sysctl name.
const maxSysctlName = 253

// validateSecurity checks, as the API server does, the security fields the
// node acts on and that a static pod could otherwise get wrong: sysctl
// names, supplementalGroupsPolicy, procMount and what hostUsers: false
// forbids. Whether the node allows a sysctl, a policy or a user namespace
// is admission's and the runtime's business, not the manifest's.
func validateSecurity(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := spec.SecurityContext; sc != nil {
		scPath := path.Child("securityContext")
		seen := map[string]bool{}
		for i, s := range sc.Sysctls {
			p := scPath.Child("sysctls").Index(i).Child("name")
			switch {
			case s.Name == "":
				errs = append(errs, field.Required(p, ""))
			case len(s.Name) > maxSysctlName || !sysctlName.MatchString(s.Name):
				errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", maxSysctlName, sysctlName)))
			case seen[s.Name]:
				errs = append(errs, field.Duplicate(p, s.Name))
			}
			seen[s.Name] = true
		}
		if p := sc.SupplementalGroupsPolicy; p != nil && *p != v1.SupplementalGroupsPolicyMerge && *p != v1.SupplementalGroupsPolicyStrict {
			errs = append(errs, field.NotSupported(scPath.Child("supplementalGroupsPolicy"), *p, []v1.SupplementalGroupsPolicy{v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict}))
		}
	}
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	if !hostUsers {
		for _, f := range []struct {
			name string
			on   bool
		}{{"hostNetwork", spec.HostNetwork}, {"hostPID", spec.HostPID}, {"hostIPC", spec.HostIPC}} {
			if f.on {
				errs = append(errs, field.Forbidden(path.Child(f.name), "when `hostUsers` is false"))
			}
		}
	}
	for _, group := range []struct {
		name       string
		containers []v1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range group.containers {
			sc := group.containers[i].SecurityContext
			if sc == nil || sc.ProcMount == nil {
				continue
			}
			p := path.Child(group.name).Index(i).Child("securityContext", "procMount")
			switch *sc.ProcMount {
			case v1.DefaultProcMount:
			case v1.UnmaskedProcMount:
				if hostUsers {
					errs = append(errs, field.Invalid(p, *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
				}
			default:
				errs = append(errs, field.NotSupported(p, *sc.ProcMount, []v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}))
			}
		}
	}
	return errs
}
