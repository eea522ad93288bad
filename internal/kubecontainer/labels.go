package kubecontainer

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels the kubelet puts on every sandbox and container (rule 2 of DESIGN.md).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelNode marks a sandbox as owned by the minikubelet of that node:
	// an agent terminates a running pod its sources no longer want only if
	// the pod carries its node's label, and leaves every other pod alone.
	LabelNode = "minikubelet.io/node"
)

// Annotations the kubelet puts on containers, plus the one minikubelet adds to
// sandboxes to know when a sandbox-level field changed (DESIGN.md rule 7).
const (
	AnnotationContainerHash            = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodTerminationGrace      = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationSandboxHash              = "minikubelet.io/sandbox-hash"
	// AnnotationSandboxQOS is the pod's QoS class when its sandbox was
	// made: the sandbox's cgroup parent lives under the class's cgroup,
	// so a static pod whose edit changes its class gets a new sandbox.
	AnnotationSandboxQOS = "minikubelet.io/qos-class"
)

// AnnotationConfigSource is the pod annotation that names the source a
// pod came from ("file", "http", "api"), as the kubelet names it;
// agent/manifest sets it.
const AnnotationConfigSource = "kubernetes.io/config.source"

// PodSource returns the source pod came from, "" when it does not say.
func PodSource(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Annotations[AnnotationConfigSource]
}

// SandboxLabels returns the labels for a pod's sandbox: the pod's own labels
// with the kubelet's identity labels on top.
func SandboxLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[LabelPodName] = pod.Name
	labels[LabelPodNamespace] = pod.Namespace
	labels[LabelPodUID] = string(pod.UID)
	if pod.Spec.NodeName != "" {
		labels[LabelNode] = pod.Spec.NodeName
	}
	return labels
}

// ContainerLabels returns the identity labels of one container of pod.
func ContainerLabels(pod *v1.Pod, containerName string) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: containerName,
	}
}

// PodUIDFromLabels returns the pod UID a CRI object belongs to, or "" when it
// carries no kubelet identity label.
func PodUIDFromLabels(labels map[string]string) types.UID {
	return types.UID(labels[LabelPodUID])
}

// RestartCountFromAnnotations reads the restart count a container was created
// with; a missing or malformed value counts as 0.
func RestartCountFromAnnotations(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[AnnotationRestartCount])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// IsSidecar reports whether an init container is a sidecar: one with
// restartPolicy Always, which keeps running beside the regular containers.
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// SpecOf returns the spec of pod's container called name, regular, init or
// ephemeral, or nil when it has none. An ephemeral container is returned
// as the v1.Container its EphemeralContainerCommon converts to (the two
// types have the same fields), pointing into pod: it must not be modified.
func SpecOf(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return EphemeralSpec(ec)
		}
	}
	return nil
}

// EphemeralSpec is ec as a v1.Container, sharing its memory: the API
// defines EphemeralContainerCommon with the fields of Container, in the
// same order, so that the conversion is free.
func EphemeralSpec(ec *v1.EphemeralContainer) *v1.Container {
	return (*v1.Container)(&ec.EphemeralContainerCommon)
}
