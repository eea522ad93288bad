package manifest

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate returns the problems that keep a node from running pod, each
// naming its field the way the API server does, for example
// `spec.containers[1].name: Duplicate value: "app"`. An empty list means the
// pod can run. Validate checks the pod as written, before
// ApplyStaticIdentity; it does not modify the pod, and it accepts fields that
// Default would fill in (an empty restartPolicy or port protocol).
//
// It is a subset of the API server's validation: the fields a node relies
// on. Each area has its own small function below; a new rule goes into the
// function of its area, or into a new one called from here.
func Validate(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateObjectMeta(&pod.ObjectMeta, field.NewPath("metadata"))...)
	errs = append(errs, validatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	return errs
}

func validateObjectMeta(meta *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if meta.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), meta.Name, msg))
		}
	}
	if meta.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(meta.Namespace) {
			errs = append(errs, field.Invalid(path.Child("namespace"), meta.Namespace, msg))
		}
	}
	return errs
}

func validatePodSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateContainers(spec, path)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, path.Child("restartPolicy"))...)
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	return errs
}

func validateRestartPolicy(p v1.RestartPolicy, path *field.Path) field.ErrorList {
	supported := []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	if p == "" || slices.Contains(supported, p) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, p, supported)}
}

// validateContainers checks the init and regular containers. Container names
// share one namespace: a regular container may not reuse an init
// container's name.
func validateContainers(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	names := sets.New[string]()
	for _, group := range []struct {
		path       *field.Path
		containers []v1.Container
	}{
		{path.Child("initContainers"), spec.InitContainers},
		{path.Child("containers"), spec.Containers},
	} {
		for i := range group.containers {
			c := &group.containers[i]
			idx := group.path.Index(i)
			errs = append(errs, validateContainer(c, idx)...)
			if c.Name != "" && names.Has(c.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

func validateContainer(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
		}
	}
	errs = append(errs, validateImage(c.Image, path.Child("image"))...)
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
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

func validatePorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	supportedProtocols := []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
	var errs field.ErrorList
	for i, p := range ports {
		idx := path.Index(i)
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

func validateEnv(env []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		if e.Name == "" {
			errs = append(errs, field.Required(path.Index(i).Child("name"), "name is required"))
		}
	}
	return errs
}
