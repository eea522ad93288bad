// Command bedclean tears down every test-bed containerd instance left under
// a base directory, e.g. after a test process was killed:
//
//	bedclean BASE...
//
// An instance dir is a direct child of BASE holding a state.json (see
// package ctrdtest); each is cleaned with ctrdtest.Cleanup, which needs
// nothing but that file. A test cluster's dir (a direct child holding a
// cluster-state.json, see package test/cluster) is cleaned first with
// cluster.Cleanup: kube-proxy's rules and the kernel settings it changed.
// Other entries are left alone. It exits 1 if any
// instance could not be cleaned completely.
package main
