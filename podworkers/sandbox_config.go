package podworkers

import (
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/qos"
)

// PodLogsDir returns the directory of a pod's container logs under root, as
// the kubelet lays it out: <root>/<namespace>_<name>_<uid>.
func PodLogsDir(root string, pod *v1.Pod) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// sandboxConfig converts a pod into the CRI sandbox config.
func (s *Syncer) sandboxConfig(pod *v1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	annotations := make(map[string]string, len(pod.Annotations)+2)
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	annotations[kubecontainer.AnnotationSandboxHash] = kubecontainer.HashSandbox(pod)
	annotations[kubecontainer.AnnotationSandboxQOS] = string(qos.Class(pod))
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: PodLogsDir(s.cfg.PodLogsDir, pod),
		Labels:       kubecontainer.SandboxLabels(pod),
		Annotations:  annotations,
		PortMappings: portMappings(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaceOptions(pod),
				// As the kubelet: the sandbox (pause) runs with the
				// runtime's default seccomp profile whatever the pod asks
				// for its containers, so that a pod-level Localhost
				// profile need not allow what pause does.
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
	if s.cfg.Cgroups != nil {
		cfg.Linux.CgroupParent = s.cfg.Cgroups.PodCgroupParent(pod)
	}
	// runc refuses a hostname without a private UTS namespace, so a
	// host-network sandbox gets none, as the kubelet does.
	if !pod.Spec.HostNetwork {
		cfg.Hostname = podHostname(pod)
	}
	// containerd refuses a privileged container in a sandbox not created
	// privileged.
	cfg.Linux.SecurityContext.Privileged = hasPrivilegedContainer(pod)
	if sc := pod.Spec.SecurityContext; sc != nil {
		lsc := cfg.Linux.SecurityContext
		lsc.RunAsUser = int64Value(sc.RunAsUser)
		lsc.RunAsGroup = int64Value(sc.RunAsGroup)
		if sc.FSGroup != nil {
			lsc.SupplementalGroups = append(lsc.SupplementalGroups, *sc.FSGroup)
		}
		lsc.SupplementalGroups = append(lsc.SupplementalGroups, sc.SupplementalGroups...)
		lsc.SupplementalGroupsPolicy = supplementalGroupsPolicy(sc)
		for _, sysctl := range sc.Sysctls {
			if cfg.Linux.Sysctls == nil {
				cfg.Linux.Sysctls = map[string]string{}
			}
			// As the kubelet: "net/ipv4/ip_forward" is net.ipv4.ip_forward
			// (admission checked the names).
			cfg.Linux.Sysctls[utilsysctl.NormalizeName(sysctl.Name)] = sysctl.Value
		}
	}
	return cfg
}

// supplementalGroupsPolicy is the pod's supplementalGroupsPolicy for CRI;
// Merge (the API's default, and CRI's zero value) when it sets none.
// Validation and admission refused other values, and Strict where the
// runtime does not support it.
func supplementalGroupsPolicy(sc *v1.PodSecurityContext) runtimeapi.SupplementalGroupsPolicy {
	if sc == nil || sc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge
	}
	return runtimeapi.SupplementalGroupsPolicy(runtimeapi.SupplementalGroupsPolicy_value[string(*sc.SupplementalGroupsPolicy)])
}

// podHostname is spec.hostname or the pod's name, cut to a DNS label.
func podHostname(pod *v1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// portMappings lists the container ports that ask for a host port.
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func protocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}

func int64Value(p *int64) *runtimeapi.Int64Value {
	if p == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *p}
}
