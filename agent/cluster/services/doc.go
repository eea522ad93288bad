// Package services keeps the cluster's Services for the node's pods'
// Service env vars (FOO_SERVICE_HOST, KUBERNETES_SERVICE_HOST, ...), as the
// kubelet's Service informer does: one list and watch of every namespace's
// Services, which the Node authorizer grants a node.
//
// Data enters from the apiserver through a shared informer started by Run;
// it leaves through Lister.Services to the pod workers, which declare the
// interface they need.
package services
