package kubecontainer

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns the hash of a container's spec. A running container
// whose hash annotation differs from its spec's hash is restarted. The hash
// covers the whole v1.Container as the API defaults it but its resources
// and resize policy, so any other edit of a container's spec changes it,
// an edit of another container does not, and a resize (in place, or a
// restart by the container's resizePolicy) is no spec change.
func HashContainer(c *v1.Container) string {
	withoutResources := *c
	withoutResources.Resources = v1.ResourceRequirements{}
	withoutResources.ResizePolicy = nil
	return hashJSON(&withoutResources)
}

// MatchesSpec reports whether a container whose hash annotation is hash
// runs spec c. Besides HashContainer's hash it accepts the hash agents
// before in-place resize wrote, which covered the whole container: for
// those, created holds the resources the container was made with (its
// actuated resources), so that an agent upgraded over running containers
// adopts them instead of restarting them.
func MatchesSpec(hash string, c *v1.Container, created *v1.ResourceRequirements) bool {
	if hash == HashContainer(c) {
		return true
	}
	if created == nil {
		return false
	}
	legacy := *c
	legacy.Resources = *created
	return hash == hashJSON(&legacy)
}

// HashSandbox returns the hash of the pod fields that are baked into a
// sandbox when it is created. When it changes the sandbox is recreated, and
// with it every container; any other edit leaves the sandbox alone.
func HashSandbox(pod *v1.Pod) string {
	spec := &pod.Spec
	type sandboxFields struct {
		HostNetwork           bool
		HostPID               bool
		HostIPC               bool
		ShareProcessNamespace *bool
		Hostname              string
		Subdomain             string
		DNSPolicy             v1.DNSPolicy
		DNSConfig             *v1.PodDNSConfig
		HostAliases           []v1.HostAlias
		SecurityContext       *v1.PodSecurityContext
		RuntimeClassName      *string
		Ports                 []v1.ContainerPort
		// HostUsers: a user namespace is the sandbox's. omitempty keeps
		// the hash of every pod that does not set it as it was.
		HostUsers *bool `json:",omitempty"`
		// Privileged: containerd refuses a privileged container in a
		// sandbox not created privileged. omitempty keeps the hash of
		// every unprivileged pod as it was.
		Privileged bool `json:",omitempty"`
	}
	f := sandboxFields{
		HostNetwork:           spec.HostNetwork,
		HostPID:               spec.HostPID,
		HostIPC:               spec.HostIPC,
		ShareProcessNamespace: spec.ShareProcessNamespace,
		Hostname:              spec.Hostname,
		Subdomain:             spec.Subdomain,
		DNSPolicy:             spec.DNSPolicy,
		DNSConfig:             spec.DNSConfig,
		HostAliases:           spec.HostAliases,
		SecurityContext:       spec.SecurityContext,
		RuntimeClassName:      spec.RuntimeClassName,
		HostUsers:             spec.HostUsers,
	}
	for _, cs := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				f.Privileged = true
			}
		}
	}
	// Host ports are set up with the sandbox's network.
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				f.Ports = append(f.Ports, p)
			}
		}
	}
	return hashJSON(f)
}

func hashJSON(v any) string {
	h := fnv.New64a()
	// Marshalling API types and plain structs of them cannot fail.
	b, _ := json.Marshal(v)
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}
