// Package objects serves node mode's pods the API objects they refer to:
// configMaps and secrets (volumes, env valueFrom, envFrom,
// imagePullSecrets) and service account tokens (projected volumes).
//
// Data enters from the apiserver: configMaps and secrets through
// per-namespace informers started the first time a namespace is asked
// about, tokens through the TokenRequest API, kept and renewed as the
// kubelet's token manager does (at 80% of their life or after 24 hours).
// It leaves through Cache's Get methods to the volume plugins and the pod
// workers, which declare the interfaces they need. The informers list and
// watch a whole namespace's configMaps and secrets, which the Node
// authorizer does not allow; DESIGN.md rule 8 asks for fetching and
// watching them one by one instead.
package objects
