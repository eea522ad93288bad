// Package cluster is node mode: everything the agent does with an
// apiserver, which it does only with --kubeconfig. Its sub-packages hold
// the parts: nodestatus (the Node and its Lease), podstatus (the pods'
// status and final deletes), mirror (mirror pods of static pods) and
// objects (the configMaps, secrets and tokens pods refer to). The
// apiserver's pod source sits with the other sources, in
// agent/sources/api.
//
// This package builds them and ties them to the agent. New, called when
// the agent is built, makes the client, the pod source and the object
// cache, which need no container runtime. The client authenticates with
// --kubeconfig's credentials as they stand or, with --bootstrap-kubeconfig
// or --rotate-certificates, with a client certificate that the
// certificate package requests and renews (credentials.go decides which,
// as the kubelet does, and writes --kubeconfig after a bootstrap). Run
// runs the source, whose snapshots go to the merge, the cache and the
// certificates' renewals. NewReporters, called once the
// runtime answered, builds the reporters from what the agent knows by
// then: the pods its sources want (localPods), their status (the status
// manager, which calls Reporters.Notify on each change), whether the node
// still holds a pod, whether the node is ready, and the runtime's version.
// Data leaves as Node, Lease and Pod writes to the apiserver.
package cluster
