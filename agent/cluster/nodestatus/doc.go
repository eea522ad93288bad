// Package nodestatus registers the agent's Node with the apiserver and
// keeps it current, as the kubelet does in node mode.
//
// Manager.Run registers the Node (labels, taints, capacity, allocatable,
// addresses, nodeInfo), retrying with back-off until the apiserver takes it;
// then it renews the node's Lease in kube-node-lease every
// LeaseRenewInterval (holder the node, duration LeaseDuration) and computes
// the node's status every StatusUpdateFrequency, patching it when anything
// but heartbeat times changed or StatusReportFrequency has passed since the
// last patch. At steady state it reads neither from the apiserver, as the
// kubelet does not: it renews the Lease as it last wrote it (reading it
// only when that fails) and compares the status with the Node as its
// watch of the Node has it (one watch, field selector metadata.name;
// a GET only when the watch has not synced or the last update failed).
// The conditions Ready, MemoryPressure, DiskPressure and
// PIDPressure come from Config.Ready and Config.Pressure. Nothing here ever
// stops the agent: while the apiserver cannot be reached, renewals and
// patches fail, are logged and are tried again at the next tick.
package nodestatus
