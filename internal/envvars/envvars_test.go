package envvars

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: ip, Ports: ports},
	}
}

func TestFromService(t *testing.T) {
	svc := service("team", "my-svc", "10.96.3.4",
		v1.ServicePort{Port: 80},
		v1.ServicePort{Name: "dns-udp", Port: 53, Protocol: v1.ProtocolUDP},
	)
	// What the kubelet's envvars.FromServices gives this Service.
	want := []v1.EnvVar{
		{Name: "MY_SVC_SERVICE_HOST", Value: "10.96.3.4"},
		{Name: "MY_SVC_SERVICE_PORT", Value: "80"},
		{Name: "MY_SVC_SERVICE_PORT_DNS_UDP", Value: "53"},
		{Name: "MY_SVC_PORT", Value: "tcp://10.96.3.4:80"},
		{Name: "MY_SVC_PORT_80_TCP", Value: "tcp://10.96.3.4:80"},
		{Name: "MY_SVC_PORT_80_TCP_PROTO", Value: "tcp"},
		{Name: "MY_SVC_PORT_80_TCP_PORT", Value: "80"},
		{Name: "MY_SVC_PORT_80_TCP_ADDR", Value: "10.96.3.4"},
		{Name: "MY_SVC_PORT_53_UDP", Value: "udp://10.96.3.4:53"},
		{Name: "MY_SVC_PORT_53_UDP_PROTO", Value: "udp"},
		{Name: "MY_SVC_PORT_53_UDP_PORT", Value: "53"},
		{Name: "MY_SVC_PORT_53_UDP_ADDR", Value: "10.96.3.4"},
	}
	if got := FromService(svc); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	v6 := service("team", "v6", "fd00::10", v1.ServicePort{Port: 443})
	if got := FromService(v6); got[2].Value != "tcp://[fd00::10]:443" {
		t.Errorf("IPv6 link URL %q", got[2].Value)
	}
}

func TestForPod(t *testing.T) {
	https := v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}
	services := []*v1.Service{
		service("default", "kubernetes", "10.96.0.1", https),
		service("default", "other", "10.96.0.2", v1.ServicePort{Port: 80}),
		service("team", "web", "10.96.1.1", v1.ServicePort{Port: 8080}),
		service("team", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		service("team", "external", ""),
		service("elsewhere", "db", "10.96.2.2", v1.ServicePort{Port: 5432}),
	}
	master := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
	}
	withWeb := map[string]string{
		"WEB_SERVICE_HOST":        "10.96.1.1",
		"WEB_SERVICE_PORT":        "8080",
		"WEB_PORT":                "tcp://10.96.1.1:8080",
		"WEB_PORT_8080_TCP":       "tcp://10.96.1.1:8080",
		"WEB_PORT_8080_TCP_PROTO": "tcp",
		"WEB_PORT_8080_TCP_PORT":  "8080",
		"WEB_PORT_8080_TCP_ADDR":  "10.96.1.1",
	}
	for k, v := range master {
		withWeb[k] = v
	}
	for _, tc := range []struct {
		name  string
		ns    string
		links bool
		want  map[string]string
	}{
		{name: "links on: the namespace's services and kubernetes", ns: "team", links: true, want: withWeb},
		{name: "links off: kubernetes only", ns: "team", links: false, want: master},
		{name: "no services at all but kubernetes", ns: "empty", links: true, want: master},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ForPod(services, tc.ns, tc.links); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
	own := service("team", "kubernetes", "10.96.9.9", v1.ServicePort{Port: 1})
	if got := ForPod(append(services, own), "team", true)["KUBERNETES_SERVICE_HOST"]; got != "10.96.9.9" {
		t.Errorf("a namespace's own kubernetes Service: KUBERNETES_SERVICE_HOST %q, want 10.96.9.9", got)
	}
	if got := ForPod(nil, "team", true); len(got) != 0 {
		t.Errorf("no services: %v", got)
	}
}
