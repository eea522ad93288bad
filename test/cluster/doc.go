// Package cluster runs a one-node Kubernetes cluster on this host for
// integration tests: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler configured as a production cluster is (Node and RBAC
// authorization, NodeRestriction, client certificates of one cluster CA,
// signed service-account tokens, the CSR signer and approver), kube-proxy
// in iptables mode and CoreDNS as host processes (and, with
// Options.MetricsServer, metrics-server behind the metrics.k8s.io
// APIService, through the aggregation layer as kubeadm sets it up, so that
// kubectl top works), and one node: a private
// containerd (test/ctrdtest) with either minikubelet or the real kubelet of
// the same version, joined with a client certificate for
// system:node:<name> in system:nodes.
//
// Data enters through bed.json (ctrdtest.LoadBed: containerd,
// kube-apiserver, kubectl, etcd, the base images) and cluster.json
// (LoadBins, written by test/scripts/prepare-cluster.sh: the other
// components, CoreDNS, metrics-server, e2e.test, ginkgo and the e2e image
// stand-ins). Start
// picks the host's primary IPv4 address (Options.HostIP), which the
// apiserver advertises and CoreDNS listens on, so that pods reach both
// through the kubernetes and kube-dns Services. It leaves through the
// admin kubeconfig (Kubeconfig, Client) and the paths of the node's
// credentials and logs.
//
// Layout under Options.Dir:
//
//	cluster-XXXX/          certificates (pki/), kubeconfigs, configs, the
//	                       components' logs, etcd's data, cluster-state.json
//	containerd-2.1-XXXX/   the node's containerd (ctrdtest), with node/ for
//	                       the agent's root, manifest and pod log dirs
//
// With Options.Agent NoAgent, Start runs the control plane alone, and
// nodes join as hollow nodes (hollow.go, StartHollow), as Kubernetes'
// kubemark simulates them: minikubelet's real binary and apiserver code
// paths against an in-memory CRI runtime of its own (test/scale/fakecri),
// with pod cgroups and block I/O accounting off, or kubemark's hollow
// kubelet, in a mount namespace whose /tmp is its node's directory. Each
// gets a client certificate for system:node:<name>; their directories
// live in the cluster's, so that Stop and Cleanup remove them. make scale
// (test/scale) runs a hundred of each.
//
// One cluster runs per host at a time (a flock on
// /run/lock/minikubelet-cluster.lock): kube-proxy owns the host's KUBE-*
// iptables chains. Stop tears everything down, kube-proxy's rules and the
// kernel settings the kubelet and the harness change (see tunables)
// included; Cleanup does the same from cluster-state.json after the test
// process died (its components die with it: Pdeathsig).
package cluster
