// Package dns makes a pod's DNS configuration as the kubelet makes it: the
// CRI DNSConfig (nameservers, search path, options) that the runtime writes
// into the sandbox's /etc/resolv.conf, from the pod's dnsPolicy and
// dnsConfig, the node's --cluster-dns and --cluster-domain, and the host's
// resolv.conf (--resolv-conf).
//
// Data enters as a Configurer's settings and a pod; the host's resolv.conf
// is read at each call, as the kubelet reads it for each sandbox. It leaves
// as a *runtimeapi.DNSConfig and the warnings the kubelet records as
// events (nameserver or search line limits exceeded, no cluster DNS), for
// the caller to log. A Configurer never changes after it is made and is
// safe for concurrent use.
package dns
