// Package kubecontainer is the agent's shared vocabulary for what runs in the
// container runtime: the labels and annotations every CRI object the agent
// creates carries (the kubelet's own keys, so crictl shows our pods as it shows
// a kubelet's), the runtime-side status of one pod as read through CRI, and
// the container spec hash that decides whether a running container still
// matches its spec.
//
// Data enters as CRI objects (runtimeapi.PodSandbox, runtimeapi.Container and
// their statuses) and leaves as PodStatus, which the PLEG caches and pod
// workers sync against. Nothing here mutates the runtime.
package kubecontainer
