package downward

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Resolver resolves downward-API references of the pods of one node. The
// zero value resolves the pod's own fields and leaves the node's empty. It
// is not changed by its methods and is safe for concurrent use.
type Resolver struct {
	// NodeName is spec.nodeName; HostIP is status.hostIP and
	// status.hostIPs, and status.podIP(s) of a host-network pod.
	NodeName string
	HostIP   string
	// Allocatable is the node's allocatable resources: a container's
	// cpu, memory or ephemeral-storage limit that is not set reads as the
	// node's amount, as with the kubelet. May be nil: an unset limit then
	// reads as 0.
	Allocatable v1.ResourceList
}

// Env is the value of an env var's valueFrom.fieldRef or
// valueFrom.resourceFieldRef for container c of pod. podIPs are the pod's
// sandbox IPs, the primary one first (empty before the sandbox has one).
// A resourceFieldRef without a containerName reads c's resources. Any
// other source (configMapKeyRef, secretKeyRef) is an error: they are no
// part of the downward API.
func (r *Resolver) Env(pod *v1.Pod, c *v1.Container, src *v1.EnvVarSource, podIPs []string) (string, error) {
	switch {
	case src.FieldRef != nil:
		return r.envField(pod, src.FieldRef.FieldPath, podIPs)
	case src.ResourceFieldRef != nil:
		return r.resource(pod, c, src.ResourceFieldRef)
	}
	return "", errors.New("needs a fieldRef or a resourceFieldRef")
}

// File is the content of a downwardAPI volume item (of a downwardAPI or a
// projected volume): one of the pod's metadata fields, or a container's
// resource, whose containerName a volume must give.
func (r *Resolver) File(pod *v1.Pod, item *v1.DownwardAPIVolumeFile) (string, error) {
	switch {
	case item.FieldRef != nil:
		v, err := metadataField(pod, item.FieldRef.FieldPath)
		if errors.Is(err, errNotMetadata) {
			return "", fmt.Errorf("fieldRef %q is not supported in a volume: use metadata.name, metadata.namespace, metadata.uid, metadata.labels or metadata.annotations (status and spec fields only as env)", item.FieldRef.FieldPath)
		}
		return v, err
	case item.ResourceFieldRef != nil:
		if item.ResourceFieldRef.ContainerName == "" {
			return "", fmt.Errorf("resourceFieldRef %q: containerName is required in a volume", item.ResourceFieldRef.Resource)
		}
		return r.resource(pod, nil, item.ResourceFieldRef)
	}
	return "", errors.New("needs a fieldRef or a resourceFieldRef")
}

// envField is the value of an env fieldRef: the pod's metadata fields, and
// the spec and status fields the API lets env read.
func (r *Resolver) envField(pod *v1.Pod, path string, podIPs []string) (string, error) {
	switch path {
	case "spec.nodeName":
		return r.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return r.HostIP, nil
	case "status.podIP", "status.podIPs":
		if pod.Spec.HostNetwork {
			return r.HostIP, nil
		}
		if path == "status.podIP" {
			if len(podIPs) == 0 {
				return "", nil
			}
			return podIPs[0], nil
		}
		return strings.Join(podIPs, ","), nil
	}
	v, err := metadataField(pod, path)
	if errors.Is(err, errNotMetadata) {
		return "", fmt.Errorf("fieldRef %q is not supported", path)
	}
	return v, err
}
