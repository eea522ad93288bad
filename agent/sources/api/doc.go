// Package api is the apiserver pod source of node mode, beside the file
// and HTTP sources (agent/sources/file, agent/sources/http).
//
// Source watches, through a client-go informer, the pods bound to this node
// (fieldSelector spec.nodeName=<node>) and sends, on the channel given to
// Run, one complete snapshot (sources.Update with Source "api") once the
// informer has synced, and then one whenever the set of pods changes. Mirror
// pods (annotation kubernetes.io/config.mirror) are left out: they only show
// static pods, which other sources run. Pods in a terminal phase (Succeeded,
// Failed) are sent: as the kubelet does, the node keeps their last
// containers and logs until they are deleted, and never starts them again.
// The pods sent are the informer's own objects, annotated as they are
// stored (config.source, config.seen) and read-only to every receiver, so
// each pod is held once. When the apiserver cannot be reached the informer
// keeps its cache, so no snapshot changes and nothing the node runs is
// touched; once it can be reached again the informer relists and the next
// snapshot carries only what really changed. Source also answers lookups
// of the pods it holds (PodByUID, PodByName, MirrorPods, Pods) from the
// informer's cache, for node mode's status syncer and mirror pod manager
// (agent/cluster/...).
package api
