package podworkers

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// fixedDNS gives every pod one configuration and records the pods asked
// about.
type fixedDNS struct {
	cfg  *runtimeapi.DNSConfig
	pods []string
}

func (d *fixedDNS) PodDNS(pod *v1.Pod) (*runtimeapi.DNSConfig, []string, error) {
	d.pods = append(d.pods, pod.Name)
	return d.cfg, []string{"a warning"}, nil
}

// fixedServices lists the same Services every time.
type fixedServices struct {
	services []*v1.Service
	synced   bool
}

func (s fixedServices) Services() ([]*v1.Service, bool) { return s.services, s.synced }

func TestSandboxDNS(t *testing.T) {
	f := newSyncer(t)
	dns := &fixedDNS{cfg: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local"}, Options: []string{"ndots:5"}}}
	f.s.cfg.DNS = dns
	pod := newPod("web", []string{"app"})
	cfg := f.s.sandboxConfig(pod, 0)
	if err := f.s.sandboxDNS(f.ctx, pod, cfg); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.DnsConfig, dns.cfg) {
		t.Errorf("sandbox DNS %v, want %v", cfg.DnsConfig, dns.cfg)
	}
	// A sync that creates the sandbox asks for its DNS; one that does not
	// (the sandbox runs) does not.
	f.observe(t, pod)
	f.mustSync(t, pod)
	f.observe(t, pod)
	f.mustSync(t, pod)
	if want := []string{"web", "web"}; !reflect.DeepEqual(dns.pods, want) {
		t.Errorf("DNS asked for %v, want %v", dns.pods, want)
	}
}

func TestContainersGetTheManagedHostsFile(t *testing.T) {
	f := newSyncer(t)
	f.s.cfg.ClusterDomain = "cluster.local"
	pod := newPod("web", []string{"app", "own"}, func(p *v1.Pod) {
		p.Spec.Hostname = "h"
		p.Spec.Subdomain = "sub"
		p.Spec.HostAliases = []v1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"a", "b"}}}
		p.Spec.Volumes = []v1.Volume{{Name: "hosts", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[1].VolumeMounts = []v1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}}
	})
	f.observe(t, pod)
	f.mustSync(t, pod)
	path := filepath.Join(f.root, "pods", string(pod.UID), "etc-hosts")
	mounts := map[string][]string{}
	for _, c := range f.rt.created {
		for _, m := range c.Mounts {
			if m.ContainerPath == "/etc/hosts" {
				mounts[c.Metadata.Name] = append(mounts[c.Metadata.Name], m.HostPath)
			}
		}
	}
	// Without volume plugins the fixture mounts no volumes: "own" has no
	// /etc/hosts mount at all, not the managed one.
	if want := map[string][]string{"app": {path}}; !reflect.DeepEqual(mounts, want) {
		t.Errorf("/etc/hosts mounts %v, want %v", mounts, want)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ip := critest.FakePodSandboxIPs[0]
	for _, line := range []string{"# Kubernetes-managed hosts file.\n", ip + "\th.sub.ns.svc.cluster.local\th\n", "10.1.1.1\ta\tb\n"} {
		if !strings.Contains(string(got), line) {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
}

func TestServiceEnv(t *testing.T) {
	services := []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.1.1", Ports: []v1.ServicePort{{Port: 80}}}},
	}
	pod := newPod("p", []string{"app"}, func(p *v1.Pod) {
		p.Annotations = map[string]string{kubecontainer.AnnotationConfigSource: "api"}
		p.Spec.Containers[0].Env = []v1.EnvVar{
			{Name: "URL", Value: "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)"},
			{Name: "WEB_SERVICE_PORT", Value: "8080"},
		}
	})
	f := newSyncer(t)
	f.s.cfg.Services = fixedServices{services: services, synced: true}
	env, err := f.s.serviceEnv(pod)
	if err != nil {
		t.Fatal(err)
	}
	got, err := makeEnv(pod, &pod.Spec.Containers[0], podEnv{Services: env})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	var names []string
	for _, kv := range got {
		vars[kv.Key] = string(kv.Value)
		names = append(names, kv.Key)
	}
	// The container's own vars first, in order, referring to the
	// Service vars; then the Service vars it does not set, sorted.
	if names[0] != "URL" || names[1] != "WEB_SERVICE_PORT" || names[2] != "KUBERNETES_PORT" {
		t.Errorf("order %v", names)
	}
	for name, want := range map[string]string{
		"URL":                     "http://10.96.1.1:80",
		"WEB_SERVICE_PORT":        "8080",
		"WEB_SERVICE_HOST":        "10.96.1.1",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1",
		"KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
	} {
		if vars[name] != want {
			t.Errorf("%s=%q, want %q", name, vars[name], want)
		}
	}
	if len(got) != 2+8+6 {
		t.Errorf("%d vars, want 16: %v", len(got), names)
	}

	off := false
	pod.Spec.EnableServiceLinks = &off
	env, _ = f.s.serviceEnv(pod)
	if _, ok := env["WEB_SERVICE_HOST"]; ok || env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("enableServiceLinks false: %v, want kubernetes' vars only", env)
	}

	f.s.cfg.Services = fixedServices{services: services}
	if _, err := f.s.serviceEnv(pod); !errors.Is(err, errServicesNotSynced) {
		t.Errorf("an API pod before the Services are read: err %v, want %v", err, errServicesNotSynced)
	}
	pod.Annotations[kubecontainer.AnnotationConfigSource] = "file"
	if env, err := f.s.serviceEnv(pod); err != nil || env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("a static pod does not wait: %v, %v", env, err)
	}
	f.s.cfg.Services = nil
	if env, err := f.s.serviceEnv(pod); err != nil || len(env) != 0 {
		t.Errorf("standalone: %v, %v, want none", env, err)
	}
}
