package pleg

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// EventType is what happened to a pod's container or sandbox.
type EventType string

// Event types, as the kubelet names them.
const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	// ContainerChanged is a change to a state that is neither running nor
	// exited (created, unknown).
	ContainerChanged EventType = "ContainerChanged"
	// PodSync asks for a sync of the pod without naming a container.
	PodSync EventType = "PodSync"
)

// Event tells the agent that something of a pod changed in the runtime.
type Event struct {
	// ID is the pod's UID.
	ID   types.UID
	Type EventType
	// Data is the ID of the container or sandbox concerned.
	Data string
	// Time is the timestamp of the cache entry that reflects the change: a
	// worker woken by this event syncs against an entry at least this new.
	Time time.Time
}
