package podworkers

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/apparmor"
)

// imageUser is the user an image runs as, as the runtime's ImageStatus
// reports it: a numeric UID, or a name only the runtime can resolve. The
// zero value means unknown: no user is forced on the container and
// runAsNonRoot cannot refuse it on the image's account.
type imageUser struct {
	UID  *int64
	Name string
}

// imageUserOf reads the user from an ImageStatus answer as the kubelet's
// getImageUser: the UID if there is one, else the name, else root.
func imageUserOf(img *runtimeapi.Image) imageUser {
	switch {
	case img.GetUid() != nil:
		uid := img.GetUid().GetValue()
		return imageUser{UID: &uid}
	case img.GetUsername() != "":
		return imageUser{Name: img.GetUsername()}
	default:
		root := int64(0)
		return imageUser{UID: &root}
	}
}

// imageUser asks the runtime which user the image ref runs as, as the
// kubelet's getImageUser does before it creates each container. (The
// ImageStatus of ensureImage is not reused: it predates a pull.)
func (s *Syncer) imageUser(ctx context.Context, ref string) (imageUser, error) {
	resp, err := s.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
	if err != nil {
		return imageUser{}, fmt.Errorf("inspect image %q for its user: %w", ref, err)
	}
	return imageUserOf(resp.GetImage()), nil
}

// defaultMaskedPaths and defaultReadonlyPaths are the paths the kubelet
// masks and makes read-only in /proc and /sys for the Default procMount
// (pkg/securitycontext). containerd applies none of its own when the CRI
// config leaves them out, so they must be sent. Each call returns a new
// slice.
func defaultMaskedPaths() []string {
	return []string{
		"/proc/asound",
		"/proc/acpi",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/sys/firmware",
		"/sys/devices/virtual/powercap",
	}
}

func defaultReadonlyPaths() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

// effectiveSecurityContext merges the pod's security context into the
// container's where the API defines inheritance (runAsUser, runAsGroup,
// runAsNonRoot, seLinuxOptions, seccompProfile): the container's own
// value wins. The result shares pointers with pod and c and must not be
// modified.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) v1.SecurityContext {
	var sc v1.SecurityContext
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.RunAsUser = psc.RunAsUser
		sc.RunAsGroup = psc.RunAsGroup
		sc.RunAsNonRoot = psc.RunAsNonRoot
		sc.SELinuxOptions = psc.SELinuxOptions
		sc.SeccompProfile = psc.SeccompProfile
	}
	csc := c.SecurityContext
	if csc == nil {
		return sc
	}
	if csc.RunAsUser != nil {
		sc.RunAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		sc.RunAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		sc.RunAsNonRoot = csc.RunAsNonRoot
	}
	if csc.SELinuxOptions != nil {
		sc.SELinuxOptions = csc.SELinuxOptions
	}
	if csc.SeccompProfile != nil {
		sc.SeccompProfile = csc.SeccompProfile
	}
	sc.Capabilities = csc.Capabilities
	sc.Privileged = csc.Privileged
	sc.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem
	sc.AllowPrivilegeEscalation = csc.AllowPrivilegeEscalation
	sc.ProcMount = csc.ProcMount
	return sc
}

// linuxSecurityContext converts a container's effective security context
// into the CRI one, as the kubelet's determineEffectiveSecurityContext.
// It refuses, with a configError (CreateContainerConfigError), a container
// that must not run as root but would or might (verifyRunAsNonRoot).
//
// Seccomp is set only when the pod or container asks for a profile; left
// unset, containerd applies its own default (unconfined unless its
// unset_seccomp_profile says otherwise), which is what the kubelet asks
// for explicitly with SeccompDefault off. AppArmor is set, in the field
// and the deprecated string, when the container, its annotation or the
// pod asks for a profile (admission refused the pod if the host cannot
// enforce it); else the runtime's default applies.
func linuxSecurityContext(pod *v1.Pod, c *v1.Container, user imageUser, seccompRoot string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	sc := effectiveSecurityContext(pod, c)
	if err := verifyRunAsNonRoot(pod, c, &sc, user); err != nil {
		return nil, err
	}
	seccomp, err := seccompProfile(sc.SeccompProfile, seccompRoot)
	if err != nil {
		return nil, &configError{msg: fmt.Sprintf("container %q: %v", c.Name, err)}
	}
	out := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:     capabilities(sc.Capabilities),
		Privileged:       sc.Privileged != nil && *sc.Privileged,
		NamespaceOptions: namespaceOptions(pod),
		SelinuxOptions:   selinuxOptions(sc.SELinuxOptions),
		RunAsUser:        int64Value(sc.RunAsUser),
		RunAsGroup:       int64Value(sc.RunAsGroup),
		ReadonlyRootfs:   sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		// no_new_privs only when asked for: the API's default is to allow
		// escalation.
		NoNewPrivs: sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		Seccomp:    seccomp,
	}
	// The deprecated string too, as the kubelet sends it for runtimes
	// that read only that.
	out.Apparmor, out.ApparmorProfile = appArmorProfile(apparmor.Profile(pod, c)) //nolint:staticcheck // SA1019: see above
	if out.RunAsUser == nil {
		// As the kubelet: the image's numeric user is passed on, a name
		// is left to the runtime to resolve. (So a group in the image's
		// "uid:gid" is not used; the runtime takes the user's primary
		// group from the image's /etc/passwd, as under the kubelet.)
		switch {
		case user.UID != nil:
			out.RunAsUser = &runtimeapi.Int64Value{Value: *user.UID}
		case user.Name != "":
			out.RunAsUsername = user.Name
		}
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
		}
		out.SupplementalGroups = append(out.SupplementalGroups, psc.SupplementalGroups...)
		out.SupplementalGroupsPolicy = supplementalGroupsPolicy(psc)
	}
	if sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount {
		out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
	} else {
		out.MaskedPaths, out.ReadonlyPaths = defaultMaskedPaths(), defaultReadonlyPaths()
	}
	return out, nil
}

// verifyRunAsNonRoot is the kubelet's check, with its messages: with
// runAsNonRoot, the effective user must be known and not 0.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, sc *v1.SecurityContext, user imageUser) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	podRef := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return &configError{msg: fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podRef, c.Name)}
		}
		return nil
	}
	switch {
	case user.UID == nil && user.Name != "":
		return &configError{msg: fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user.Name, podRef, c.Name)}
	case user.UID == nil:
		return nil
	case *user.UID == 0:
		return &configError{msg: fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podRef, c.Name)}
	case *user.UID < 0 || *user.UID > math.MaxInt32:
		return &configError{msg: fmt.Sprintf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
			*user.UID, math.MaxInt32, math.MaxInt32, podRef, c.Name)}
	}
	return nil
}

// capabilities converts add/drop lists. CRI names carry no CAP_ prefix:
// containerd (1.6 and 2.x, WithCapabilities) prepends "CAP_" to every name
// but "ALL", so a name written with the prefix would become CAP_CAP_... and
// be ignored by runc. Unlike the kubelet, which passes names as written,
// the prefix is stripped here so that such a name does what it says.
func capabilities(caps *v1.Capabilities) *runtimeapi.Capability {
	if caps == nil {
		return nil
	}
	conv := func(in []v1.Capability) []string {
		out := make([]string, len(in))
		for i, c := range in {
			name := string(c)
			if len(name) > 4 && strings.EqualFold(name[:4], "CAP_") {
				name = name[4:]
			}
			out[i] = name
		}
		return out
	}
	return &runtimeapi.Capability{AddCapabilities: conv(caps.Add), DropCapabilities: conv(caps.Drop)}
}

func selinuxOptions(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// seccompProfile converts an explicit seccomp profile as the kubelet's
// fieldProfile does; nil leaves the choice to the runtime. A Localhost
// profile is a file under root (<root-dir>/seccomp).
func seccompProfile(p *v1.SeccompProfile, root string) (*runtimeapi.SecurityProfile, error) {
	if p == nil {
		return nil, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("securityContext.seccompProfile: localhostProfile must be set when type is Localhost")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(root, *p.LocalhostProfile)}, nil
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
}

// appArmorProfile converts an AppArmor profile as the kubelet's
// getAppArmorProfile does, with the deprecated string form older runtimes
// read; nil leaves the runtime's default. A Localhost profile without a
// name, or one of an unknown type, never gets here (admission refused its
// pod).
func appArmorProfile(p *v1.AppArmorProfile) (*runtimeapi.SecurityProfile, string) {
	switch {
	case p == nil:
		return nil, ""
	case p.Type == v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault
	case p.Type == v1.AppArmorProfileTypeLocalhost && p.LocalhostProfile != nil:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile
	case p.Type == v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined
	default:
		return nil, "" // an unknown type: admission refused the pod
	}
}

// hasPrivilegedContainer reports whether any container of pod is
// privileged: containerd refuses a privileged container in a sandbox that
// was not created privileged.
func hasPrivilegedContainer(pod *v1.Pod) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if sc := cs[i].SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				return true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if sc := pod.Spec.EphemeralContainers[i].SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			return true
		}
	}
	return false
}
