// Package status turns the runtime status of a pod into the pod status the
// Kubernetes API shows (phase, conditions, IPs, per-container state), and
// keeps the newest one of every pod for the agent's endpoints.
//
// Data enters from pod workers (Manager.SetPodStatus after every sync) and
// leaves through Manager.Get, read by the HTTP server's /pods. A pod's
// terminal phase (Succeeded, Failed) never changes back. A pod the agent
// terminates for a reason of its own (a node shutdown) is marked with
// Manager.SetTerminal: it reports phase Failed with that reason, and its
// status outlives its removal from the runtime until Manager.Forget. A pod
// the node refuses at admission (agent/admission) gets its status from
// Manager.Reject alone, with no worker ever calling SetPodStatus, and is
// likewise terminal.
//
// A pod is reported as allocated (its containers' resources as granted,
// see podworkers): each container the runtime has shows its requests as
// allocatedResources and, in resources, what it runs with, derived as the
// kubelet derives it from the runtime's report, the resources applied to
// it and the previous status (resources.go); the PodResizePending and
// PodResizeInProgress conditions come from Config.Resources.
package status
