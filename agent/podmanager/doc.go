// Package podmanager holds the pods this node's sources want: the pods
// the merge (agent/podconfig) last sent to the syncLoop, by UID, with
// those being deleted in the API kept until their workers let go of them.
//
// Data enters only from the syncLoop, which Sets and Removes pods as it
// dispatches the merge's operations; it leaves through Get and List to
// whoever reads the node's pods (the HTTP endpoints, housekeeping, the
// stats, node mode, graceful shutdown). It holds no status: that is the
// status manager's (agent/status). In node mode it also tells the object
// cache (agent/cluster/objects) which pods to keep the configMaps and
// secrets of: each pod set that has not finished is registered, each one
// removed or finished unregistered (WithReferences).
package podmanager
