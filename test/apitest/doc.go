// Package apitest runs a real etcd and kube-apiserver on 127.0.0.1 for the
// node-mode integration tests: both built by test/scripts/prepare.sh and
// named in bed.json (ctrdtest.Bed.KubeAPIServer, .Etcd, .Kubectl).
//
// Start makes, under a directory of its own, a serving certificate, a
// service-account key pair and a token file with one admin token
// (system:masters), starts etcd and the apiserver on free ports
// (--endpoint-reconciler-type=none, as a loopback advertise address
// requires) and writes a kubeconfig with that token. Stop ends both by
// PID. StopAPIServer and StartAPIServer take the apiserver down and up
// again on the same port, for outage tests. Namespace creates a test
// namespace with what a controller-manager would put in it (the default
// ServiceAccount and the kube-root-ca.crt configMap), since none runs.
package apitest
