package volumes

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodVolumes are the volumes of one pod as SetUpPod left them, ready to
// be mounted into its containers.
type PodVolumes struct {
	m       *Manager
	pod     *v1.Pod
	podDir  string
	volumes map[string]volume
}

// HostPath returns where the volume called name is on the host, and
// whether the pod has it.
func (pv *PodVolumes) HostPath(name string) (string, bool) {
	v, ok := pv.volumes[name]
	return v.hostPath, ok
}

// Mounts returns the CRI mounts of c's volumeMounts, in their order:
// readOnly (always for downwardAPI, configMap, secret and projected
// volumes, as the kubelet mounts them), mountPropagation (None or unset:
// PRIVATE; HostToContainer: HOST_TO_CONTAINER; Bidirectional:
// BIDIRECTIONAL, for privileged containers only), recursiveReadOnly
// Enabled, and subPath or subPathExpr ($(VAR) from env, the container's
// resolved environment; an unset or empty variable is an error).
//
// A subPath is resolved inside its volume one component at a time
// without following any symlink out of it; one that would leave the
// volume ("..", an absolute path, a symlink escaping it) is refused.
// Missing directories on the way are created with the mode of the
// volume's root, as the kubelet does. The resolved file or directory is
// then bind-mounted, through the descriptor that resolved it, at
// <pod dir>/volume-subpaths/<volume>/<container>/<index>, and that is
// what the container mounts: a container cannot swap a component for a
// symlink between the check and the runtime's mount. Such mounts are
// reused when a container restarts, and removed by TearDownPod.
//
// Errors name the container, the volumeMount and the cause, and are the
// user's to fix (the kubelet reports them as CreateContainerConfigError).
// Call it from the pod's worker, after SetUpPod.
func (pv *PodVolumes) Mounts(ctx context.Context, c *v1.Container, env map[string]string) ([]*runtimeapi.Mount, error) {
	out := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		m, err := pv.mount(ctx, c, i, vm, env)
		if err != nil {
			return nil, fmt.Errorf("container %q: volumeMount %q at %s: %w", c.Name, vm.Name, vm.MountPath, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func (pv *PodVolumes) mount(ctx context.Context, c *v1.Container, index int, vm *v1.VolumeMount, env map[string]string) (*runtimeapi.Mount, error) {
	vol, ok := pv.volumes[vm.Name]
	if !ok {
		return nil, fmt.Errorf("the pod has no volume %q", vm.Name)
	}
	propagation, err := mountPropagation(c, vm.MountPropagation)
	if err != nil {
		return nil, err
	}
	m := &runtimeapi.Mount{
		ContainerPath: vm.MountPath,
		HostPath:      vol.hostPath,
		Readonly:      vm.ReadOnly || vol.readOnly,
		Propagation:   propagation,
	}
	if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
		// The runtime refuses it if it cannot; IfPossible is taken as
		// not possible (the agent does not ask the runtime).
		m.RecursiveReadOnly = true
	}
	sub, err := subPathOf(vm, env)
	if err != nil {
		return nil, err
	}
	if vol.image != "" {
		return pv.imageMount(m, vol.image, sub)
	}
	if sub != "" {
		m.HostPath, err = pv.bindSubPath(ctx, subPathMount{container: c.Name, index: index, volume: vm.Name, volumeRoot: vol.hostPath, path: sub})
		if err != nil {
			return nil, fmt.Errorf("subPath %q: %w", sub, err)
		}
	}
	return m, nil
}

// mountPropagation converts a volumeMount's mountPropagation, allowing
// Bidirectional only in a privileged container, as the apiserver does.
func mountPropagation(c *v1.Container, mode *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	if mode == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *mode {
	case v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case v1.MountPropagationBidirectional:
		if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
			return 0, fmt.Errorf("mountPropagation Bidirectional is only allowed in privileged containers")
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("mountPropagation %q is not supported: use None, HostToContainer or Bidirectional", *mode)
}

// subPathOf is the volumeMount's subPath, or its subPathExpr expanded
// with env, checked to be relative and free of "..".
func subPathOf(vm *v1.VolumeMount, env map[string]string) (string, error) {
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		if sub != "" {
			return "", fmt.Errorf("subPath and subPathExpr are mutually exclusive")
		}
		var err error
		if sub, err = expandSubPathExpr(vm.SubPathExpr, env); err != nil {
			return "", err
		}
	}
	if sub == "" {
		return "", nil
	}
	if path.IsAbs(sub) {
		return "", fmt.Errorf("subPath %q must be a relative path", sub)
	}
	if slices.Contains(strings.Split(sub, "/"), "..") {
		return "", fmt.Errorf("subPath %q must not contain '..'", sub)
	}
	return sub, nil
}

// expandSubPathExpr replaces each $(VAR) of expr with VAR's value in env,
// and $$ with $, as Kubernetes expands it. A variable that is unset or
// empty is an error, as with the kubelet.
func expandSubPathExpr(expr string, env map[string]string) (string, error) {
	var b strings.Builder
	missing := map[string]bool{}
	for i := 0; i < len(expr); i++ {
		if expr[i] != '$' || i+1 >= len(expr) {
			b.WriteByte(expr[i])
			continue
		}
		switch expr[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(expr[i+2:], ')')
			if end < 0 {
				b.WriteString(expr[i:])
				i = len(expr)
				continue
			}
			name := expr[i+2 : i+2+end]
			v := env[name]
			if v == "" {
				missing[name] = true
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, "$("+n+")")
		}
		sort.Strings(names)
		return "", fmt.Errorf("subPathExpr %q: no value for %s in the container's env", expr, strings.Join(names, ", "))
	}
	return b.String(), nil
}
