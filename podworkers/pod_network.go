package podworkers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/envvars"
	"github.com/minikubelet/minikubelet/internal/etchosts"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// dnsConfigurer makes the DNS configuration of a pod's sandbox
// (dns.Configurer): the nameservers, search path and options, and
// warnings to log (the kubelet's DNSConfigForming and MissingClusterDNS
// events). Safe for concurrent use.
type dnsConfigurer interface {
	PodDNS(pod *v1.Pod) (*runtimeapi.DNSConfig, []string, error)
}

// serviceLister lists the Services of every namespace, for containers'
// Service env vars (node mode; nil standalone, where there are none).
// Safe for concurrent use.
type serviceLister interface {
	// Services returns the Services known, and whether they have been
	// read from the apiserver at least once.
	Services() ([]*v1.Service, bool)
}

// errServicesNotSynced holds back an API pod's containers until the
// Services have been read: started earlier they would miss their env vars.
// The kubelet's message.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// sandboxDNS sets the DNS configuration of the sandbox about to be made
// for pod. Without a configurer the runtime's default holds (containerd
// copies the host's resolv.conf).
func (s *Syncer) sandboxDNS(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	if s.cfg.DNS == nil {
		return nil
	}
	dns, warnings, err := s.cfg.DNS.PodDNS(pod)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		klog.FromContext(ctx).Info("Warning: pod DNS", "warning", w)
		// "Reason: message", the kubelet's event on the pod.
		if reason, msg, ok := strings.Cut(w, ": "); ok {
			s.podEvent(pod, v1.EventTypeWarning, reason, "%s", msg)
		}
	}
	cfg.DnsConfig = dns
	return nil
}

// serviceEnv returns the Service env vars of pod's containers, as the
// kubelet makes them: none standalone; for an API pod, an error until the
// Services have been read once (a static pod does not wait).
func (s *Syncer) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	if s.cfg.Services == nil {
		return nil, nil
	}
	services, synced := s.cfg.Services.Services()
	// "api" is the apiserver source's kubernetes.io/config.source, as
	// the kubelet names it (sources.API).
	if !synced && kubecontainer.PodSource(pod) == "api" {
		return nil, errServicesNotSynced
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return envvars.ForPod(services, pod.Namespace, links), nil
}

// hostsFile writes the pod's managed /etc/hosts into its directory and
// returns its path, or "" when its containers get none: a pod on its own
// network whose IPs are not known, as with the kubelet.
func (s *Syncer) hostsFile(pod *v1.Pod, podIPs []string) (string, error) {
	if !pod.Spec.HostNetwork && len(podIPs) == 0 {
		return "", nil
	}
	// The directory is made with the sandbox; an adopted sandbox's may
	// have gone.
	if err := os.MkdirAll(s.podDir(pod.UID), 0o750); err != nil {
		return "", fmt.Errorf("create the pod's directory: %w", err)
	}
	return etchosts.Write(s.podDir(pod.UID), etchosts.Pod{
		IPs:         podIPs,
		Hostname:    podHostname(pod),
		Domain:      etchosts.Domain(pod, s.cfg.ClusterDomain),
		Aliases:     pod.Spec.HostAliases,
		HostNetwork: pod.Spec.HostNetwork,
		HostFile:    s.cfg.HostsFile,
	})
}

// addHostsMount mounts the pod's hosts file at /etc/hosts in c, unless c
// mounts something there itself or the pod has none.
func addHostsMount(cfg *runtimeapi.ContainerConfig, path string, c *v1.Container) {
	if path == "" || etchosts.Mounted(c) {
		return
	}
	cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: etchosts.ContainerPath, HostPath: path, SelinuxRelabel: true})
}

// appendServiceEnv adds the Service env vars that the container does not
// set itself after its own, sorted by name (the kubelet adds them in map
// order).
func appendServiceEnv(out []*runtimeapi.KeyValue, services map[string]string, own map[string]string) []*runtimeapi.KeyValue {
	names := make([]string, 0, len(services))
	for name := range services {
		if _, set := own[name]; !set {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, &runtimeapi.KeyValue{Key: name, Value: []byte(services[name])})
	}
	return out
}
