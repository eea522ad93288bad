// Package events holds what every part of the agent needs to record the
// kubelet's events: the references events point at (a pod, one of its
// containers, the node) and the kubelet's reasons. Recording them to the
// apiserver is agent/cluster/events' business; a standalone agent records
// none. Parts declare the small recorder interface they use themselves.
package events
