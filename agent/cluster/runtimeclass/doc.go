// Package runtimeclass resolves a pod's spec.runtimeClassName to the CRI
// runtime handler its sandbox is run with, through the RuntimeClass API
// (node.k8s.io/v1), which the Node authorizer lets a node read.
//
// Data enters as a RuntimeClass name when a pod's sandbox is about to be
// made, and leaves as the class's handler, or as the kubelet's error for
// a class the apiserver does not have (a NotFound of
// runtimeclass.node.k8s.io). Each lookup is one GET of that one class:
// sandboxes are made rarely, so nothing is listed or watched.
package runtimeclass
