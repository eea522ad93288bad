// Package objects serves node mode's pods the API objects they refer to:
// configMaps and secrets (volumes, env valueFrom, envFrom,
// imagePullSecrets) and service account tokens (projected volumes).
//
// Data enters from the apiserver, with no permission beyond what the Node
// authorizer grants a node: configMaps and secrets through one list and
// watch per object (field selector metadata.name=NAME in its namespace),
// as the kubelet's watch-based manager does, for the objects the pods
// registered with Cache.RegisterPod refer to (agent/podmanager registers
// the pods the node is to run and unregisters those gone or finished);
// tokens through the TokenRequest API, kept and renewed as the kubelet's
// token manager does (at 80% of their life or after 24 hours). It leaves
// through Cache's Get methods to the volume plugins and the pod workers,
// which declare the interfaces they need; they read again at each sync
// of the pod, so a change an object's watch saw reaches a pod's volumes
// within the sync period (--sync-frequency).
package objects
