package etchosts

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The headers the kubelet writes; tools and tests recognise the file by
// them.
const (
	managedHeader            = "# Kubernetes-managed hosts file.\n"
	managedHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// FileName is the file's name in the pod's directory; ContainerPath is
// where it is mounted.
const (
	FileName      = "etc-hosts"
	ContainerPath = "/etc/hosts"
)

// maxHostFileSize bounds what is read of the host's /etc/hosts.
const maxHostFileSize = 4 << 20

// Pod is what a pod's hosts file is made of.
type Pod struct {
	// IPs are the pod's IPs; for a pod on its own network, each gets a
	// line naming the pod.
	IPs []string
	// Hostname is the pod's hostname; Domain, when set, its domain
	// (<subdomain>.<namespace>.svc.<cluster-domain>).
	Hostname string
	Domain   string
	Aliases  []v1.HostAlias
	// HostNetwork makes the file the host's hosts file plus the aliases.
	HostNetwork bool
	// HostFile is the host's hosts file, read for a host-network pod
	// (/etc/hosts when empty).
	HostFile string
}

// Content returns the file's content, reading HostFile for a host-network
// pod.
func Content(p Pod) ([]byte, error) {
	var b bytes.Buffer
	if p.HostNetwork {
		path := p.HostFile
		if path == "" {
			path = ContainerPath
		}
		host, err := readAtMost(path, maxHostFileSize)
		if err != nil {
			return nil, fmt.Errorf("read the host's hosts file for a host-network pod: %w", err)
		}
		b.WriteString(managedHeaderHostNetwork)
		b.Write(host)
		writeAliases(&b, p.Aliases)
		return b.Bytes(), nil
	}
	b.WriteString(managedHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range p.IPs {
		if p.Domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, p.Hostname, p.Domain, p.Hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, p.Hostname)
		}
	}
	writeAliases(&b, p.Aliases)
	return b.Bytes(), nil
}

// writeAliases writes one line per hostAlias, its hostnames separated by
// tabs, after a comment.
func writeAliases(b *bytes.Buffer, aliases []v1.HostAlias) {
	if len(aliases) == 0 {
		return
	}
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
}

// Write writes p's hosts file into podDir, mode 0644, replacing the one
// there, and returns its path.
func Write(podDir string, p Pod) (string, error) {
	content, err := Content(p)
	if err != nil {
		return "", err
	}
	path := filepath.Join(podDir, FileName)
	// In place, as the kubelet writes it: the containers already running
	// keep seeing the file their /etc/hosts is bound to.
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return "", fmt.Errorf("write the pod's hosts file: %w", err)
	}
	if err := os.Chmod(path, 0o644); err != nil { //nolint:gosec // G302: as above
		return "", fmt.Errorf("write the pod's hosts file: %w", err)
	}
	return path, nil
}

// Mounted reports whether c mounts a volume at /etc/hosts itself, in which
// case it gets no managed file.
func Mounted(c *v1.Container) bool {
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == ContainerPath {
			return true
		}
	}
	return false
}

// Domain is the domain of a pod with a subdomain:
// <subdomain>.<namespace>.svc.<clusterDomain>; empty without one.
func Domain(pod *v1.Pod, clusterDomain string) string {
	if pod.Spec.Subdomain == "" {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
}

func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the host's hosts file
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}
