// Package userns gives pods with spec.hostUsers: false their user
// namespace's ID mappings, as the kubelet's user namespace manager does:
// each such pod gets a range of 65536 host IDs of its own, mapped to IDs 0
// to 65535 in the pod, for both users and groups. The ranges are taken from
// the kubelet's default span, host IDs 65536 to 2^32-1 in steps of 65536,
// so no two pods of the node share a host ID and none maps host root.
//
// Data enters as a pod UID (Mappings) and leaves as the CRI UserNamespace
// of its sandbox and containers. A pod's range is kept in
// <root-dir>/pods/<uid>/userns, the kubelet's file (JSON uidMappings and
// gidMappings), written before the range is used, so a restarted agent
// reads back the ranges its running pods use (New) and gives them the same
// again. Release frees a pod's range once the pod is gone. Safe for
// concurrent use.
package userns
