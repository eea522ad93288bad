// Package scale runs make scale (issue 21 items 5 and 6): hollow nodes of
// minikubelet and of kubemark side by side against one real control plane
// on this host, as Kubernetes' kubemark simulates a cluster, and reports
// what a node costs.
//
// Run starts the control plane of test/cluster alone (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler), measures it
// idle for a baseline, then, one agent kind after the other (a phase
// each, so that the apiserver's figures belong to one kind):
//
//  1. starts Options.Nodes hollow nodes (cluster.StartHollow) and waits
//     until every one is Ready;
//  2. measures a window with no pod (idle);
//  3. creates Options.Pods pods in a namespace of the phase's own, a
//     pause container each with no volume, which the scheduler spreads
//     over the nodes, and records for each the time from its create call
//     to the watch showing it Running;
//  4. lets the statuses settle, then measures a window with the pods
//     running (loaded);
//  5. deletes the pods and records the time from each delete call to the
//     watch showing it gone (the agent's final delete);
//  6. stops the nodes and deletes their Node objects.
//
// A window's figures: each agent's RSS, its anonymous part and its PSS
// (median, mean and max over the nodes; minikubelet's fakecri apart, while
// kubemark's fake runtime is in its own process), the agents' CPU, the
// apiserver's and etcd's CPU, and the requests the nodes made, from the
// apiserver's own metrics: apiserver_flowcontrol_dispatched_requests_total
// of the flow schemas whose subjects are the group system:nodes (every
// node's identity is system:node:<name> in system:nodes, and nothing else
// has it), per node and minute; apiserver_request_total by verb and
// resource, all clients, for the breakdown (its labels carry no user).
// The requests per pod are the nodes' requests from the first create to
// the last pod gone beyond the idle rate, divided by the pods.
//
// The run is bounded: Options.Timeout bounds it all, a watch of
// MemAvailable stops it below Options.MinFreeMiB, and whatever happens
// (an error, SIGINT, the timeout) it stops every process it started and
// removes their directories, the cluster's Stop included.
//
// Data enters as Options (the binaries, the sizes); it leaves as a
// Report, which main writes as JSON and text.
package scale
