package events

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's event reasons the agent records.
const (
	// Containers.
	Created           = "Created"
	Started           = "Started"
	Killing           = "Killing"
	Failed            = "Failed"
	BackOff           = "BackOff"
	FailedPostStart   = "FailedPostStartHook"
	FailedPreStop     = "FailedPreStopHook"
	ExceededGrace     = "ExceededGracePeriod"
	Unhealthy         = "Unhealthy"
	ProbeWarning      = "ProbeWarning"
	Pulling           = "Pulling"
	Pulled            = "Pulled"
	ErrImageNeverPull = "ErrImageNeverPull"
	// Pods.
	FailedMount            = "FailedMount"
	SandboxChanged         = "SandboxChanged"
	FailedCreatePodSandBox = "FailedCreatePodSandBox"
	DeadlineExceeded       = "DeadlineExceeded"
	// In-place resize of pods.
	ResizeStarted    = "ResizeStarted"
	ResizeCompleted  = "ResizeCompleted"
	ResizeDeferred   = "ResizeDeferred"
	ResizeInfeasible = "ResizeInfeasible"
	ResizeError      = "ResizeError"
	// The node.
	Starting     = "Starting"
	NodeReady    = "NodeReady"
	NodeNotReady = "NodeNotReady"
)

// Pod is the reference of an event about pod.
func Pod(pod *v1.Pod) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		UID:             pod.UID,
		ResourceVersion: pod.ResourceVersion,
	}
}

// Container is the reference of an event about container c of pod, with
// the field path the kubelet gives it (spec.containers{name},
// spec.initContainers{name}).
func Container(pod *v1.Pod, c *v1.Container) *v1.ObjectReference {
	ref := Pod(pod)
	ref.FieldPath = fieldPath(pod, c.Name)
	return ref
}

func fieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	return fmt.Sprintf("spec.containers{%s}", name)
}

// Node is the reference of an event about the node, as the kubelet makes
// it: the node's name is also its UID.
func Node(name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// Discard records nothing: the recorder of a standalone agent, whose log
// says it all, and of parts given none.
type Discard struct{}

// Eventf does nothing.
func (Discard) Eventf(*v1.ObjectReference, string, string, string, ...any) {}
