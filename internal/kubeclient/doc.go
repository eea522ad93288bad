// Package kubeclient is the agent's apiserver client: typed clients for
// the few resources a node reads and writes (pods, nodes, leases, the
// configMaps, secrets, Services and service-account tokens its pods use,
// events, certificate signing requests, token and access reviews, runtime
// classes), over one REST client per API group that share one HTTP client
// and its connections.
//
// It stands in for client-go's clientset (k8s.io/client-go/kubernetes):
// every typed client of client-go imports its scheme package, whose init
// registers each of Kubernetes' ~55 API group versions, with their
// conversions and defaults, into a global scheme. A node agent uses six of
// them. Linking the rest costs the agent about 7 MiB of resident binary
// pages and 1.5 MiB of heap at start (measured; see README's figures),
// whatever it does afterwards. The scheme here holds only the groups below
// and is built once per Clientset, never global.
//
// The clients are client-go's own generic typed clients (k8s.io/client-go/
// gentype), so their methods have the signatures of the clientset's:
// a consumer declares the few methods it calls as a small interface, which
// both these clients and client-go's fake clientset satisfy in tests.
// Resources whose encoding client-go prefers as protobuf (core, coordination)
// are requested as protobuf, as the kubelet does.
package kubeclient
