package manifest

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerScope is what a container's validation needs to know of its pod.
type containerScope struct {
	// volumes are the names of the pod's volumes.
	volumes sets.Set[string]
	// gracePeriod is the pod's termination grace period, defaulted; negative
	// when invalid (reported elsewhere).
	gracePeriod int64
	// init is true for an init container, sidecar for an init container
	// with restartPolicy Always, which runs beside the regular ones.
	init, sidecar bool
	// podRestartPolicy is the pod's restartPolicy.
	podRestartPolicy v1.RestartPolicy
}

// validateContainers checks the init and regular containers. Container names
// share one namespace: a regular container may not reuse an init
// container's name.
func validateContainers(spec *v1.PodSpec, volumes sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	grace := int64(DefaultTerminationGracePeriodSeconds)
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	names := sets.New[string]()
	for _, group := range []struct {
		path       *field.Path
		containers []v1.Container
		init       bool
	}{
		{path.Child("initContainers"), spec.InitContainers, true},
		{path.Child("containers"), spec.Containers, false},
	} {
		for i := range group.containers {
			c := &group.containers[i]
			idx := group.path.Index(i)
			scope := containerScope{
				volumes:     volumes,
				gracePeriod: grace,
				init:        group.init,
				sidecar:     group.init && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways,

				podRestartPolicy: spec.RestartPolicy,
			}
			errs = append(errs, validateContainer(c, scope, idx)...)
			if c.Name != "" && names.Has(c.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

func validateContainer(c *v1.Container, scope containerScope, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name is required"))
	} else {
		for _, msg := range isDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
		}
	}
	errs = append(errs, validateImage(c.Image, path.Child("image"))...)
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, scope, path.Child("resizePolicy"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, scope.volumes, path.Child("volumeMounts"))...)
	errs = append(errs, validateBidirectional(c, path.Child("volumeMounts"))...)
	errs = append(errs, validateProbes(c, scope, path)...)
	errs = append(errs, validateLifecycle(c, scope, path.Child("lifecycle"))...)
	return errs
}

func validateImage(image string, path *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(path, "image is required")}
	case strings.TrimSpace(image) != image:
		return field.ErrorList{field.Invalid(path, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// validatePorts checks one container's ports. Port names are unique within
// the container, as probes and hooks refer to them by name.
func validatePorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	supportedProtocols := []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		idx := path.Index(i)
		if p.Name != "" {
			msgs := isPortName(p.Name)
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(idx.Child("name"), p.Name, msg))
			}
			if len(msgs) == 0 && names.Has(p.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
			errs = append(errs, field.Invalid(idx.Child("containerPort"), p.ContainerPort, msg))
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(idx.Child("hostPort"), p.HostPort, msg))
			}
		}
		if p.Protocol != "" && !slices.Contains(supportedProtocols, p.Protocol) {
			errs = append(errs, field.NotSupported(idx.Child("protocol"), p.Protocol, supportedProtocols))
		}
	}
	return errs
}

// validateHostNetworkPorts checks that on the host network every hostPort
// equals its containerPort: there is no port mapping. A hostPort of 0 is
// accepted, as Default sets it to the containerPort.
func validateHostNetworkPorts(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for _, group := range []struct {
		path       *field.Path
		containers []v1.Container
	}{
		{path.Child("initContainers"), spec.InitContainers},
		{path.Child("containers"), spec.Containers},
	} {
		for i, c := range group.containers {
			for j, p := range c.Ports {
				if p.HostPort != 0 && p.HostPort != p.ContainerPort {
					errs = append(errs, field.Invalid(group.path.Index(i).Child("ports").Index(j).Child("containerPort"),
						p.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	return errs
}

// validateResources checks the names and amounts of a container's requests
// and limits. Only the resources a node without device plugins provides are
// known: cpu, memory, ephemeral-storage and hugepages-<size>. Huge pages
// cannot be overcommitted: their request, if any, equals their limit. Every
// amount must fit in an int64 (validateQuantityRange), which is checked
// before any comparison.
func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	// outOfRange holds the names of the limits too large to compare.
	outOfRange := map[v1.ResourceName]bool{}
	for _, name := range sortedNames(r.Limits) {
		q := r.Limits[name]
		keyPath := limPath.Key(string(name))
		errs = append(errs, validateResourceName(name, keyPath)...)
		if e := validateQuantityRange(q, name == v1.ResourceCPU, keyPath); len(e) > 0 {
			errs = append(errs, e...)
			outOfRange[name] = true
			continue
		}
		errs = append(errs, validateResourceQuantity(q, keyPath)...)
	}
	for _, name := range sortedNames(r.Requests) {
		q := r.Requests[name]
		keyPath := reqPath.Key(string(name))
		errs = append(errs, validateResourceName(name, keyPath)...)
		if e := validateQuantityRange(q, name == v1.ResourceCPU, keyPath); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		errs = append(errs, validateResourceQuantity(q, keyPath)...)
		limit, hasLimit := r.Limits[name]
		if outOfRange[name] {
			continue
		}
		isHugePages := strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
		switch {
		case isHugePages && !hasLimit:
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		case isHugePages && !q.Equal(limit):
			errs = append(errs, field.Invalid(keyPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(keyPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func sortedNames(l v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func validateResourceName(name v1.ResourceName, path *field.Path) field.ErrorList {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return nil
	}
	if size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix); ok {
		if q, err := resource.ParseQuantity(size); err != nil || q.Sign() <= 0 {
			return field.ErrorList{field.Invalid(path, name, "must be hugepages-<page size>, such as hugepages-2Mi")}
		}
		return nil
	}
	return field.ErrorList{field.Invalid(path, name, "must be a standard resource for containers: cpu, memory, ephemeral-storage or hugepages-<page size>")}
}

func validateResourceQuantity(q resource.Quantity, path *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must be greater than or equal to 0")}
	}
	return nil
}

// validateEnv checks the names of environment variables (any printable
// ASCII but '=', as the API server accepts since Kubernetes 1.34) and that
// each valueFrom names exactly one source.
func validateEnv(env []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		idx := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(idx.Child("name"), "name is required"))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(idx.Child("name"), e.Name, msg))
			}
		}
		if e.ValueFrom != nil {
			errs = append(errs, validateEnvVarSource(e, idx.Child("valueFrom"))...)
		}
	}
	return errs
}

func validateEnvVarSource(e v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	src := e.ValueFrom
	n := 0
	if s := src.FieldRef; s != nil {
		n++
		errs = append(errs, validateEnvFieldRef(s, path.Child("fieldRef"))...)
	}
	if s := src.ResourceFieldRef; s != nil {
		n++
		errs = append(errs, validateEnvResourceFieldRef(s, path.Child("resourceFieldRef"))...)
	}
	if s := src.ConfigMapKeyRef; s != nil {
		n++
		errs = append(errs, validateKeyRef(s.Name, s.Key, path.Child("configMapKeyRef"))...)
	}
	if s := src.SecretKeyRef; s != nil {
		n++
		errs = append(errs, validateKeyRef(s.Name, s.Key, path.Child("secretKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case e.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// envFieldPaths returns the pod fields an environment variable can take,
// besides one label or annotation (metadata.labels['key']).
func envFieldPaths() []string {
	return []string{
		"metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	}
}

func validateEnvFieldRef(s *v1.ObjectFieldSelector, path *field.Path) field.ErrorList {
	if s.APIVersion != "" && s.APIVersion != "v1" {
		return field.ErrorList{field.NotSupported(path.Child("apiVersion"), s.APIVersion, []string{"v1"})}
	}
	p := s.FieldPath
	switch {
	case p == "":
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	case slices.Contains(envFieldPaths(), p), isSubscript(p, "metadata.labels"), isSubscript(p, "metadata.annotations"):
		return nil
	}
	supported := append(envFieldPaths(), "metadata.labels['<KEY>']", "metadata.annotations['<KEY>']")
	return field.ErrorList{field.NotSupported(path.Child("fieldPath"), p, supported)}
}

// isSubscript reports whether p is prefix['key'] with a non-empty key.
func isSubscript(p, prefix string) bool {
	key, ok := strings.CutPrefix(p, prefix+"['")
	if !ok {
		return false
	}
	key, ok = strings.CutSuffix(key, "']")
	return ok && key != ""
}

// envResources returns the container resources an environment variable can
// take, besides requests.hugepages-<size> and limits.hugepages-<size>.
func envResources() []string {
	return []string{
		"limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage",
	}
}

func validateEnvResourceFieldRef(s *v1.ResourceFieldSelector, path *field.Path) field.ErrorList {
	r := s.Resource
	switch {
	case r == "":
		return field.ErrorList{field.Required(path.Child("resource"), "")}
	case slices.Contains(envResources(), r),
		strings.HasPrefix(r, "limits."+v1.ResourceHugePagesPrefix),
		strings.HasPrefix(r, "requests."+v1.ResourceHugePagesPrefix):
		return validateDivisor(r, s.Divisor, path.Child("divisor"))
	}
	supported := append(envResources(), "limits.hugepages-<size>", "requests.hugepages-<size>")
	return field.ErrorList{field.NotSupported(path.Child("resource"), r, supported)}
}

func validateKeyRef(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		for _, msg := range isConfigMapKey(key) {
			errs = append(errs, field.Invalid(path.Child("key"), key, msg))
		}
	}
	return errs
}

// validateEnvFrom checks that each envFrom entry names exactly one source.
func validateEnvFrom(envFrom []v1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range envFrom {
		idx := path.Index(i)
		switch {
		case e.ConfigMapRef == nil && e.SecretRef == nil:
			errs = append(errs, field.Invalid(idx, "", "must specify one of: `configMapRef` or `secretRef`"))
		case e.ConfigMapRef != nil && e.SecretRef != nil:
			errs = append(errs, field.Invalid(idx, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}
