// Package imageref parses container image references ("busybox:1.36",
// "reg.example:5000/team/app@sha256:...") by the grammar of
// github.com/distribution/reference, which the kubelet and containerd
// parse with, and normalizes them as Docker does ("busybox" is
// "docker.io/library/busybox:latest").
//
// It is its own small parser rather than that module: distribution/reference
// compiles ten regular expressions when the program starts (414 KB
// of heap at init, kept for the program's life, in every agent whether it
// ever parses an image name or not), while minikubelet needs one function
// of it. TestAgreesWithDistribution and FuzzAgreesWithDistribution hold
// the two to the same answers.
package imageref
