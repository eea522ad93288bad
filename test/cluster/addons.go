package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The cluster's DNS and service proxy run as host processes, not as pods
// on the node: the node agent under test then cannot break the DNS and the
// services every other test relies on, and a failing agent shows up as its
// own failures, not as everybody's.
const (
	corednsUser   = "system:coredns"
	nodeListRole  = "minikubelet-test:nodes-list-configmaps-and-secrets"
	managedBy     = "minikubelet-test-cluster"
	addonsTimeout = 2 * time.Minute
)

// createAddonObjects creates what the add-ons and nodes need in the API:
// CoreDNS's RBAC, the kube-dns Service with an EndpointSlice pointing at
// CoreDNS on the host, and kubeadm's CSR approval bindings (a node may
// renew its own client certificate; bootstrap-token holders may request
// one).
func (c *Cluster) createAddonObjects(ctx context.Context, client kubernetes.Interface) error {
	rbac := client.RbacV1()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: corednsUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	bindings := []struct {
		name, role string
		subject    rbacv1.Subject
	}{
		{corednsUser, corednsUser, rbacv1.Subject{Kind: rbacv1.UserKind, Name: corednsUser}},
		{"kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:nodes"}},
		{"kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:bootstrappers"}},
		{"kubeadm:kubelet-bootstrap", "system:node-bootstrapper",
			rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:bootstrappers"}},
	}
	if c.opts.NodeListsObjects {
		list := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: nodeListRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"list", "watch"}},
			},
		}
		if _, err := rbac.ClusterRoles().Create(ctx, list, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create ClusterRole %s: %w", list.Name, err)
		}
		bindings = append(bindings, struct {
			name, role string
			subject    rbacv1.Subject
		}{nodeListRole, nodeListRole, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:nodes"}})
	}
	for _, b := range bindings {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{b.subject},
		}
		if b.subject.Kind != rbacv1.ServiceAccountKind {
			crb.Subjects[0].APIGroup = rbacv1.GroupName
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create ClusterRoleBinding %s: %w", b.name, err)
		}
	}
	return c.createDNSService(ctx, client)
}

// createDNSService makes kube-dns a Service without a selector whose one
// EndpointSlice names CoreDNS on the host IP: kube-proxy forwards
// DNSServiceIP:53 there.
func (c *Cluster) createDNSService(ctx context.Context, client kubernetes.Interface) error {
	port := int32(c.ports.dns)
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system",
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: v1.ServiceSpec{
			ClusterIP: DNSServiceIP,
			Ports: []v1.ServicePort{
				{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP, TargetPort: intstr.FromInt32(port)},
				{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(port)},
			},
		},
	}
	if _, err := client.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create Service kube-system/kube-dns: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-host", Namespace: "kube-system",
			Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns", discoveryv1.LabelManagedBy: managedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{c.hostIP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolUDP)},
			{Name: ptr.To("dns-tcp"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)},
		},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, slice, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create EndpointSlice kube-system/%s: %w", slice.Name, err)
	}
	return nil
}

// startAddons starts kube-proxy, CoreDNS and, if asked, metrics-server as
// host processes and waits until kube-proxy has synced its rules, CoreDNS
// has synced with the apiserver and the apiserver serves the metrics API.
// kube-proxy starts once the Node exists: it reads its IPs.
func (c *Cluster) startAddons(ctx context.Context) error {
	if err := c.startProxy(); err != nil {
		return err
	}
	if err := c.startCoreDNS(); err != nil {
		return err
	}
	if c.opts.MetricsServer {
		if err := c.startMetricsServer(); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, addonsTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, w := range []struct {
		what, url string
		p         *proc
	}{
		{"wait for kube-proxy to sync its rules", "http://127.0.0.1:" + strconv.Itoa(c.ports.proxyHealthz) + "/healthz", c.proxy},
		{"wait for CoreDNS to be ready", "http://127.0.0.1:" + strconv.Itoa(c.ports.dnsReady) + "/ready", c.dns},
	} {
		err := poll(wctx, w.what, controlPlanePoll, func(ctx context.Context) error {
			return httpOK(ctx, hc, w.url)
		}, w.p)
		if err != nil {
			return err
		}
	}
	if c.opts.MetricsServer {
		return c.waitMetricsAPI(wctx)
	}
	return nil
}

// startProxy runs kube-proxy in iptables mode with a config that leaves
// the host's conntrack settings and route_localnet alone.
func (c *Cluster) startProxy() error {
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": c.files.proxyKubeconfig},
		"mode":               "iptables",
		"hostnameOverride":   c.nodeName,
		"clusterCIDR":        c.ctr.Subnet(),
		"healthzBindAddress": "127.0.0.1:" + strconv.Itoa(c.ports.proxyHealthz),
		"metricsBindAddress": "127.0.0.1:" + strconv.Itoa(c.ports.proxyMetrics),
		"iptables":           map[string]any{"localhostNodePorts": false, "syncPeriod": "30s", "minSyncPeriod": "1s"},
		"nodePortAddresses":  []string{c.hostIP.String() + "/32"},
		"conntrack": map[string]any{"maxPerCore": 0, "min": 0,
			"tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("kube-proxy config: %w", err)
	}
	c.files.proxyConfig = c.dir + "/kube-proxy.yaml"
	if err := writeFile(c.files.proxyConfig, data); err != nil {
		return err
	}
	c.proxy, err = launch("kube-proxy", c.opts.Bins.Proxy, c.logPath("kube-proxy"), nil,
		"--config", c.files.proxyConfig, "-v", "1")
	return err
}

// startCoreDNS runs CoreDNS on the host IP, serving the cluster domain
// from the apiserver and forwarding the rest to the host's resolvers.
func (c *Cluster) startCoreDNS() error {
	corefile := fmt.Sprintf(`.:%d {
    bind %s
    errors
    ready 127.0.0.1:%d
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30
    loadbalance
}
`, c.ports.dns, c.hostIP, c.ports.dnsReady, DNSDomain, c.files.dnsKubeconfig)
	c.files.corefile = c.dir + "/Corefile"
	if err := writeFile(c.files.corefile, []byte(corefile)); err != nil {
		return err
	}
	var err error
	c.dns, err = launch("coredns", c.opts.Bins.CoreDNS, c.logPath("coredns"), nil, "-conf", c.files.corefile)
	return err
}

// httpOK GETs url and wants a 200.
func httpOK(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %w", url, resp.Status, errNotYet)
	}
	return nil
}

// cleanupProxy removes kube-proxy's rules from the host (kube-proxy
// --cleanup), which survive kube-proxy itself.
func cleanupProxy(ctx context.Context, bin, logPath string) error {
	p, err := launch("kube-proxy --cleanup", bin, logPath, nil, "--cleanup", "-v", "1")
	if err != nil {
		return err
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.stop()
		return fmt.Errorf("kube-proxy --cleanup: %w", ctx.Err())
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("kube-proxy --cleanup: %s; log:\n%s", p.cmd.ProcessState, tailFile(logPath, 10))
	}
	return nil
}
