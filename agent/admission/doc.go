// Package admission decides whether the node takes a pod at all, as the
// kubelet's pod admission does: a chain of admit handlers, each of which
// may refuse a pod with the kubelet's reason and message. The first
// refusal wins.
//
// Data enters when the syncLoop meets a pod new to the node (an ADD): it
// asks Chain.Admit with the pod and the pods already admitted that are
// still active (not finished, or still being terminated). A refused pod
// never gets a worker or a sandbox; the syncLoop reports it Failed with
// the handler's reason and "Pod was rejected: <message>" (agent/status),
// and it stays refused until it is added anew (a static pod's manifest
// removed and written again, an API pod deleted and created again).
//
// Handlers are plain functions of the pod and the other admitted pods,
// built once from the node's configuration and what the runtime says it
// supports (MaxPods, Sysctls, AppArmor, SupplementalGroupsPolicy, ...);
// others may append theirs to the chain the agent builds (agent/admit.go).
// A handler must be quick and must not block: the syncLoop calls it. The
// package is pure apart from what a handler was built with.
package admission
