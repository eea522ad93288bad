package prober

import "k8s.io/apimachinery/pkg/types"

// Type is the kind of probe.
type Type string

// Probe types.
const (
	Liveness  Type = "Liveness"
	Readiness Type = "Readiness"
	Startup   Type = "Startup"
)

// Result is a change of one probe's outcome for one container, sent to the
// syncLoop. Workers send one only when the outcome changes.
type Result struct {
	PodUID        types.UID
	ContainerName string
	// ContainerID is the runtime's ID, without the "containerd://" prefix.
	ContainerID string
	Type        Type
	Success     bool
}
