package qos

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resources parses "cpu=500m memory=1Gi" into a resource list; "" is none.
func resources(spec string) v1.ResourceList {
	l := v1.ResourceList{}
	for _, field := range strings.Fields(spec) {
		name, quantity, _ := strings.Cut(field, "=")
		l[v1.ResourceName(name)] = resource.MustParse(quantity)
	}
	return l
}

// ctr is a container with requests and limits in resources' notation.
func ctr(name, requests, limits string) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: resources(requests), Limits: resources(limits)}}
}

// sidecar is ctr as an init container that restarts always.
func sidecar(name, requests, limits string) v1.Container {
	c := ctr(name, requests, limits)
	c.RestartPolicy = new(v1.ContainerRestartPolicy)
	*c.RestartPolicy = v1.ContainerRestartPolicyAlways
	return c
}

func pod(init []v1.Container, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{InitContainers: init, Containers: containers}}
}
