// Package etchosts writes the /etc/hosts the kubelet gives each container
// of a pod, kept in the pod's directory (<root-dir>/pods/<uid>/etc-hosts)
// and mounted at /etc/hosts: for a pod on its own network, a header, the
// localhost lines, the pod's IPs with its hostname (and its FQDN when it
// has a subdomain) and the pod's hostAliases; for a host-network pod, the
// host's /etc/hosts and the hostAliases.
//
// Data enters as the pod's spec, its IPs and hostname; it leaves as the
// file and its content. Nothing is cached; the functions are safe for
// concurrent use on different files.
package etchosts
