// Package mirror keeps a mirror pod in the API for every static pod the
// node runs, as the kubelet does: a copy of the static pod bound to the
// node, annotated kubernetes.io/config.mirror with the static pod's config
// hash, owned by the Node.
//
// Manager.Run reconciles every Period and whenever Wake is called (the
// agent wakes it when its pods or the API's pods change): it creates the
// mirror pods that are missing, deletes (grace 0) and then re-creates
// those that are out of date or that someone deleted (a deletion timestamp),
// and deletes mirror pods whose static pod is gone. It only ever deletes
// pods that carry the mirror annotation. The mirror pods it sees come from
// the apiserver source's informer; it does nothing until that has synced.
package mirror
