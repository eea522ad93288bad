package config

import (
	"flag"
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DNSConfig is what pods' DNS is made of: the kubelet's flags of the same
// names (internal/dns makes each pod's resolv.conf from them).
type DNSConfig struct {
	// ClusterDNS are the cluster DNS servers' IPs that pods with dnsPolicy
	// ClusterFirst (or ClusterFirstWithHostNet) get as nameservers.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (cluster.local): pods'
	// search path and their hostnames' domain.
	ClusterDomain string
	// ResolvConf is the host's resolv.conf, what pods with dnsPolicy
	// Default get; empty gives them none.
	ResolvConf string
}

// defaultDNSConfig returns the kubelet's defaults.
func defaultDNSConfig() DNSConfig {
	return DNSConfig{ResolvConf: "/etc/resolv.conf"}
}

// addDNSFlags registers the DNS flags.
func (c *DNSConfig) addDNSFlags(fs *flag.FlagSet) {
	fs.Var((*ipListFlag)(&c.ClusterDNS), "cluster-dns", "IP addresses of the cluster DNS server, separated by commas: pods with dnsPolicy ClusterFirst get them as nameservers, with the search path <namespace>.svc.<cluster-domain> svc.<cluster-domain> <cluster-domain> and ndots:5. Without it, such pods get the host's DNS (dnsPolicy Default) and a warning is logged.")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "The cluster's DNS domain, such as cluster.local: the search path of pods using the cluster DNS, and the domain of their hostnames in /etc/hosts.")
	fs.StringVar(&c.ResolvConf, "resolv-conf", c.ResolvConf, "The resolv.conf whose nameservers, search path and options pods with dnsPolicy Default (and host-network pods with ClusterFirst) get; its search path is added to the cluster's for ClusterFirst pods. Empty gives such pods no DNS (nameserver 127.0.0.1).")
}

// validateDNS reports bad DNS settings, each naming its flag.
func (c *DNSConfig) validateDNS() []error {
	var errs []error
	if err := checkIPList(c.ClusterDNS); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-dns: %w", err))
	}
	if err := checkClusterDomain(c.ClusterDomain); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-domain: %w", err))
	}
	return errs
}

// checkIPList checks that each entry is an IP address.
func checkIPList(ips []string) error {
	for _, ip := range ips {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("%q is not an IP address; want addresses such as 10.96.0.10, separated by commas", ip)
		}
	}
	return nil
}

// checkClusterDomain checks that the domain is a DNS subdomain (a
// trailing dot allowed), or empty.
func checkClusterDomain(d string) error {
	if d == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(strings.TrimSuffix(d, ".")); len(msgs) > 0 {
		return fmt.Errorf("%q is not a DNS domain: %s", d, strings.Join(msgs, "; "))
	}
	return nil
}

// ipListFlag is --cluster-dns: IP addresses separated by commas; each use
// replaces the list.
type ipListFlag []string

func (l *ipListFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *ipListFlag) Set(s string) error {
	var out []string
	for _, ip := range strings.Split(s, ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			out = append(out, ip)
		}
	}
	if err := checkIPList(out); err != nil {
		return err
	}
	*l = out
	return nil
}
