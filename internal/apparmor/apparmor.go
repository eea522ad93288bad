package apparmor

import (
	"errors"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Profile is the AppArmor profile container c of pod runs with, as the
// kubelet resolves it: the container's field, else its deprecated pod
// annotation, else the pod's field; nil when none is asked for (the
// runtime's default applies). An annotation of an unknown form is
// ignored, as by the kubelet.
func Profile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if p := fromAnnotation(pod.Annotations, c.Name); p != nil {
		return p
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil {
		return pod.Spec.SecurityContext.AppArmorProfile
	}
	return nil
}

func fromAnnotation(annotations map[string]string, container string) *v1.AppArmorProfile {
	val, ok := annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+container]
	if !ok {
		return nil
	}
	switch {
	case val == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
	case val == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	default:
		return nil
	}
}

// Required reports whether pod asks for an AppArmor profile other than
// Unconfined anywhere (a field of the pod or of any container, or an
// annotation), so that a host without AppArmor cannot run it as asked.
func Required(pod *v1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
		return true
	}
	for _, c := range allContainers(pod) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
			return true
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

// Invalid returns an error naming the first container whose Localhost
// profile names no profile, as the kubelet's validator refuses it, or
// whose profile is of an unknown type (which the API server refuses, but
// a static pod's manifest may hold).
func Invalid(pod *v1.Pod) error {
	for _, c := range allContainers(pod) {
		p := Profile(pod, c)
		switch {
		case p == nil || p.Type == v1.AppArmorProfileTypeRuntimeDefault || p.Type == v1.AppArmorProfileTypeUnconfined:
		case p.Type == v1.AppArmorProfileTypeLocalhost:
			if p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "" {
				return fmt.Errorf("invalid empty AppArmor profile name: container %q: appArmorProfile.localhostProfile must name a profile loaded on the host", c.Name)
			}
		default:
			return fmt.Errorf("container %q: unknown AppArmor profile type %q (want RuntimeDefault, Localhost or Unconfined)", c.Name, p.Type)
		}
	}
	return nil
}

func allContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// HostSupport returns nil when the host's kernel enforces AppArmor, else
// the kubelet's error: AppArmor is enabled when
// /sys/kernel/security/apparmor exists and
// /sys/module/apparmor/parameters/enabled starts with Y.
func HostSupport() error {
	return hostSupport("/sys")
}

func hostSupport(sys string) error {
	if _, err := os.Stat(sys + "/kernel/security/apparmor"); err == nil {
		b, err := os.ReadFile(sys + "/module/apparmor/parameters/enabled") //nolint:gosec // G304: a fixed file under /sys (a temp dir in tests)
		if err == nil && len(b) > 1 && b[0] == 'Y' {
			return nil
		}
	}
	return errors.New("AppArmor is not enabled on the host")
}
