// Package downward resolves the downward API: the pod fields and container
// resources that a container's env (valueFrom.fieldRef and
// valueFrom.resourceFieldRef) and the files of downwardAPI and projected
// volumes refer to. It is the one place both read them, so that an env var
// and a volume file naming the same field or resource always agree, as they
// do with the kubelet.
//
// Data enters as the pod's spec and a Resolver's node facts (node name,
// host IP, allocatable resources) and, for env, the pod's sandbox IPs. It
// leaves as the strings the kubelet would put in the variable or the file.
// Nothing here does I/O; every function is safe for concurrent use.
//
// What each place may refer to is the API server's rule, which manifest
// validation applies: env may read spec and status fields, a volume only
// the pod's metadata. Resolver.File refuses spec and status fields all the
// same, with an error naming the field, since a volume is written before
// the pod has an IP.
package downward
