package envvars

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterService is the default namespace's Service whose variables every
// pod gets, whatever its enableServiceLinks.
const masterService = "kubernetes"

// ForPod returns the Service variables of a pod in namespace ns, from
// services (every namespace's): those of ns's Services when links is true,
// and those of default/kubernetes always. A Service of ns named kubernetes
// wins over default's. Services without a cluster IP (headless, or
// ExternalName) or without a port give none.
func ForPod(services []*v1.Service, ns string, links bool) map[string]string {
	picked := map[string]*v1.Service{}
	for _, svc := range services {
		if !hasClusterIP(svc) {
			continue
		}
		switch {
		case svc.Namespace == ns && links:
			picked[svc.Name] = svc
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == masterService:
			if _, ok := picked[svc.Name]; !ok {
				picked[svc.Name] = svc
			}
		}
	}
	out := map[string]string{}
	for _, svc := range picked {
		for _, e := range FromService(svc) {
			out[e.Name] = e.Value
		}
	}
	return out
}

// hasClusterIP is the kubelet's IsServiceIPSet, and a port to name.
func hasClusterIP(svc *v1.Service) bool {
	ip := svc.Spec.ClusterIP
	return ip != "" && ip != v1.ClusterIPNone && len(svc.Spec.Ports) > 0
}

// FromService returns one Service's variables, in the kubelet's order.
func FromService(svc *v1.Service) []v1.EnvVar {
	if !hasClusterIP(svc) {
		return nil
	}
	prefix := varName(svc.Name)
	ip := svc.Spec.ClusterIP
	out := []v1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(svc.Spec.Ports[0].Port))},
	}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			out = append(out, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + varName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(v1.ProtocolTCP))
		if p.Protocol != "" {
			proto = strings.ToLower(string(p.Protocol))
		}
		port := strconv.Itoa(int(p.Port))
		url := proto + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			// Docker names the first port's URL FOO_PORT.
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out = append(out,
			v1.EnvVar{Name: pp, Value: url},
			v1.EnvVar{Name: pp + "_PROTO", Value: proto},
			v1.EnvVar{Name: pp + "_PORT", Value: port},
			v1.EnvVar{Name: pp + "_ADDR", Value: ip},
		)
	}
	return out
}

// varName is a Service or port name as a variable name: upper case, with
// underscores for dashes.
func varName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
