package dns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The limits the kubelet applies to the resolv.conf it gives a pod (those
// of glibc, and of the API's validation of dnsConfig).
const (
	// MaxNameservers is how many nameservers a resolver reads.
	MaxNameservers = 3
	// MaxSearchPaths is how many search domains are kept.
	MaxSearchPaths = 32
	// MaxSearchListChars bounds the search line, spaces included.
	MaxSearchListChars = 2048
	// maxSearchDomainLen is the longest search domain kept: some
	// resolvers (glibc 2.28) abort on a longer one.
	maxSearchDomainLen = 253
)

// defaultOptions are the options of a pod that uses the cluster's DNS.
var defaultOptions = []string{"ndots:5"}

// Configurer makes pods' DNS configurations. The zero value gives every
// pod an empty configuration for the host's (no resolv.conf read).
type Configurer struct {
	// ClusterDNS are the cluster DNS servers (--cluster-dns); none makes
	// ClusterFirst pods fall back to the host's DNS, with a warning.
	ClusterDNS []net.IP
	// ClusterDomain is --cluster-domain, e.g. cluster.local; empty adds no
	// cluster search domains.
	ClusterDomain string
	// ResolvConf is --resolv-conf, the host's resolv.conf that pods with
	// dnsPolicy Default get; empty gives them a resolver that looks
	// nothing up (127.0.0.1, or ::1 for an IPv6 node, and search ".").
	ResolvConf string
	// NodeIPs are the node's addresses; they choose the loopback resolver
	// when ResolvConf is empty.
	NodeIPs []net.IP
}

// policy is how a pod's DNS is made.
type policy int

const (
	policyCluster policy = iota // the cluster's DNS
	policyHost                  // the host's resolv.conf
	policyNone                  // only the pod's dnsConfig
)

// podPolicy maps dnsPolicy to a policy as the kubelet does: ClusterFirst
// on the host network is Default; an unknown policy (manifest validation
// refuses it) is ClusterFirst.
func podPolicy(pod *v1.Pod) policy {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return policyNone
	case v1.DNSClusterFirstWithHostNet:
		return policyCluster
	case v1.DNSDefault:
		return policyHost
	case v1.DNSClusterFirst, "":
		if pod.Spec.HostNetwork {
			return policyHost
		}
	}
	return policyCluster
}

// PodDNS returns the DNS configuration of pod's sandbox, and warnings the
// kubelet would record as events on the pod (reason DNSConfigForming or
// MissingClusterDNS). It fails only when the host's resolv.conf cannot be
// read or parsed; the error names the file.
func (c *Configurer) PodDNS(pod *v1.Pod) (*runtimeapi.DNSConfig, []string, error) {
	cfg, err := c.hostDNS()
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	p := podPolicy(pod)
	if p == policyCluster && len(c.ClusterDNS) == 0 {
		warnings = append(warnings, fmt.Sprintf("MissingClusterDNS: the node has no cluster DNS (--cluster-dns, clusterDNS) and cannot give pod %s/%s dnsPolicy %q: it falls back to %q", pod.Namespace, pod.Name, v1.DNSClusterFirst, v1.DNSDefault))
		p = policyHost
	}
	switch p {
	case policyNone:
		cfg = &runtimeapi.DNSConfig{}
	case policyCluster:
		cfg.Servers = make([]string, 0, len(c.ClusterDNS))
		for _, ip := range c.ClusterDNS {
			cfg.Servers = append(cfg.Servers, ip.String())
		}
		cfg.Searches = c.clusterSearches(pod.Namespace, cfg.Searches)
		cfg.Options = slices.Clone(defaultOptions)
	case policyHost:
		if c.ResolvConf == "" {
			cfg.Servers = nil
			for _, ip := range c.NodeIPs {
				if ip.To4() == nil {
					cfg.Servers = append(cfg.Servers, "::1")
				} else {
					cfg.Servers = append(cfg.Servers, "127.0.0.1")
				}
			}
			if len(cfg.Servers) == 0 {
				cfg.Servers = []string{"127.0.0.1"}
			}
			cfg.Searches = []string{"."}
		}
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, pc.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, pc.Searches...))
		cfg.Options = mergeOptions(cfg.Options, pc.Options)
	}
	var w []string
	cfg.Servers, w = fitNameservers(cfg.Servers)
	warnings = append(warnings, w...)
	cfg.Searches, w = fitSearches(cfg.Searches)
	warnings = append(warnings, w...)
	return cfg, warnings, nil
}

// clusterSearches is the search path of a pod of namespace ns using the
// cluster's DNS: <ns>.svc.<domain> svc.<domain> <domain>, then the host's.
func (c *Configurer) clusterSearches(ns string, host []string) []string {
	if c.ClusterDomain == "" {
		return host
	}
	s := []string{ns + ".svc." + c.ClusterDomain, "svc." + c.ClusterDomain, c.ClusterDomain}
	return omitDuplicates(append(s, host...))
}

// hostDNS reads ResolvConf; an empty ResolvConf gives an empty config.
func (c *Configurer) hostDNS() (*runtimeapi.DNSConfig, error) {
	if c.ResolvConf == "" {
		return &runtimeapi.DNSConfig{}, nil
	}
	f, err := os.Open(c.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("host DNS (--resolv-conf): %w", err)
	}
	defer f.Close()
	cfg, err := ParseResolvConf(f)
	if err != nil {
		return nil, fmt.Errorf("host DNS (--resolv-conf): %s: %w", c.ResolvConf, err)
	}
	return cfg, nil
}

// maxResolvConfSize bounds what is read of a resolv.conf.
const maxResolvConfSize = 1 << 20

// ParseResolvConf reads a resolv.conf as the kubelet does: nameserver
// lines add a server, the last search line sets the search path (with
// trailing dots removed and "." left out), options lines add options (a
// later option of the same name replaces an earlier one). Comments start
// with # or ;. A nameserver line with no address is an error.
func ParseResolvConf(r io.Reader) (*runtimeapi.DNSConfig, error) {
	cfg := &runtimeapi.DNSConfig{}
	var errs []error
	sc := bufio.NewScanner(io.LimitReader(r, maxResolvConfSize))
	sc.Buffer(make([]byte, 0, 4096), maxResolvConfSize)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				errs = append(errs, fmt.Errorf("line %d: nameserver with no address", n))
				continue
			}
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search":
			cfg.Searches = []string{}
			for _, s := range fields[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = appendOptions(cfg.Options, fields[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// optionName is an option's name: what comes before its ":".
func optionName(o string) string {
	name, _, _ := strings.Cut(o, ":")
	return name
}

// appendOptions adds options, each replacing an option of its name
// already there.
func appendOptions(opts []string, add ...string) []string {
	for _, o := range add {
		i := slices.IndexFunc(opts, func(x string) bool { return optionName(x) == optionName(o) })
		if i >= 0 {
			opts[i] = o
		} else {
			opts = append(opts, o)
		}
	}
	return opts
}

// mergeOptions adds the pod's dnsConfig options to opts, each replacing
// one of its name. The kubelet merges them through a map, so its order
// varies from one sandbox to the next; here the options are sorted by
// name, which resolvers do not care about.
func mergeOptions(opts []string, pod []v1.PodDNSConfigOption) []string {
	byName := map[string]string{}
	for _, o := range opts {
		name, value, _ := strings.Cut(o, ":")
		byName[name] = value
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		byName[o.Name] = value
	}
	out := make([]string, 0, len(byName))
	for name, value := range byName {
		if value != "" {
			name += ":" + value
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// omitDuplicates keeps the first of each string.
func omitDuplicates(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// fitNameservers keeps the first MaxNameservers servers.
func fitNameservers(servers []string) ([]string, []string) {
	if len(servers) <= MaxNameservers {
		return servers, nil
	}
	servers = servers[:MaxNameservers]
	return servers, []string{"DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(servers, " ")}
}

// fitSearches keeps the first MaxSearchPaths search domains, leaves out
// those longer than a DNS name, then drops domains from the end until the
// line fits MaxSearchListChars, as the kubelet does.
func fitSearches(searches []string) ([]string, []string) {
	exceeded := false
	if len(searches) > MaxSearchPaths {
		searches = searches[:MaxSearchPaths]
		exceeded = true
	}
	kept := searches[:0:0]
	for _, s := range searches {
		if len(s) > maxSearchDomainLen {
			exceeded = true
			continue
		}
		kept = append(kept, s)
	}
	searches = kept
	for n := len(strings.Join(searches, " ")); n > MaxSearchListChars; {
		last := searches[len(searches)-1]
		n -= len(last) + 1
		searches = searches[:len(searches)-1]
		exceeded = true
	}
	if !exceeded {
		return searches, nil
	}
	return searches, []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(searches, " ")}
}
