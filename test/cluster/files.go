package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeFiles picks the ports and writes the certificates, keys and
// kubeconfigs every component needs, under <dir>/pki.
func (c *Cluster) writeFiles() error {
	if err := c.pickPorts(); err != nil {
		return err
	}
	pki := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return fmt.Errorf("pki dir: %w", err)
	}
	ca, err := newCA(pki, "ca", "minikubelet-test-cluster-ca")
	if err != nil {
		return err
	}
	c.ca = ca
	f := &c.files
	if err := c.writeAggregationFiles(pki); err != nil {
		return err
	}
	f.state = filepath.Join(c.dir, stateFile)
	if f.saKey, f.saPub, err = writeServiceAccountKeys(pki); err != nil {
		return err
	}
	if f.apiCert, f.apiKey, err = ca.issue(pki, "apiserver", certSpec{
		cn: "kube-apiserver", server: true,
		ips: []net.IP{c.hostIP, net.ParseIP(APIServiceIP), net.ParseIP("127.0.0.1")},
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + DNSDomain},
	}); err != nil {
		return err
	}
	// The apiserver's client certificate towards kubelets (logs, exec,
	// port-forward, the node proxy), as kubeadm makes it.
	if f.kubeletClientCert, f.kubeletClientKey, err = ca.issue(pki, "apiserver-kubelet-client", certSpec{
		cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true,
	}); err != nil {
		return err
	}
	// The node's serving certificate for its kubelet port, signed by the
	// cluster CA, which the apiserver checks (--kubelet-certificate-authority).
	if f.nodeCert, f.nodeKey, err = ca.issue(pki, "node-serving", certSpec{
		cn: "system:node:" + c.nodeName, orgs: []string{"system:nodes"}, server: true,
		ips: []net.IP{c.hostIP}, dns: []string{c.nodeName},
	}); err != nil {
		return err
	}
	clients := []struct {
		name, cn, org string
		kubeconfig    *string
	}{
		{"admin", "kubernetes-admin", "system:masters", &f.adminKubeconfig},
		{"controller-manager", "system:kube-controller-manager", "", &f.kcmKubeconfig},
		{"scheduler", "system:kube-scheduler", "", &f.schedKubeconfig},
		{"kube-proxy", "system:kube-proxy", "", &f.proxyKubeconfig},
		{"coredns", corednsUser, "", &f.dnsKubeconfig},
		{"node", "system:node:" + c.nodeName, "system:nodes", &f.nodeKubeconfig},
		{"metrics-server", metricsServerUser, "", &f.metricsKubeconfig},
	}
	for _, cl := range clients {
		spec := certSpec{cn: cl.cn, client: true}
		if cl.org != "" {
			spec.orgs = []string{cl.org}
		}
		cert, key, err := ca.issue(pki, cl.name, spec)
		if err != nil {
			return err
		}
		*cl.kubeconfig = filepath.Join(c.dir, cl.name+".kubeconfig")
		if err := c.writeKubeconfig(*cl.kubeconfig, cert, key); err != nil {
			return err
		}
	}
	return nil
}

// writeAggregationFiles writes what the aggregation layer needs, as
// kubeadm makes it: a CA of its own for the front proxy (so that no other
// certificate of the cluster CA can pose as the apiserver towards an
// aggregated API), the apiserver's front-proxy-client certificate, and
// metrics-server's serving certificate for its Service's name, signed by
// the cluster CA that the APIService's caBundle names.
func (c *Cluster) writeAggregationFiles(pki string) error {
	f := &c.files
	fp, err := newCA(pki, "front-proxy-ca", "front-proxy-ca")
	if err != nil {
		return err
	}
	f.frontProxyCA = fp.CertFile
	if f.frontProxyCert, f.frontProxyKey, err = fp.issue(pki, "front-proxy-client", certSpec{cn: frontProxyUser, client: true}); err != nil {
		return err
	}
	svc := metricsServerName + "." + metav1.NamespaceSystem + ".svc"
	f.metricsCert, f.metricsKey, err = c.ca.issue(pki, "metrics-server-serving", certSpec{
		cn: svc, server: true, ips: []net.IP{c.hostIP}, dns: []string{svc, svc + "." + DNSDomain},
	})
	return err
}

// pickPorts chooses free ports: the apiserver's and CoreDNS's on the host
// IP, the rest on loopback; the node's kubelet port is KubeletPort.
func (c *Cluster) pickPorts() error {
	lo := net.ParseIP("127.0.0.1")
	p := &c.ports
	var err error
	for _, pick := range []struct {
		port *int
		ip   net.IP
	}{
		{&p.api, c.hostIP}, {&p.metrics, c.hostIP},
		{&p.etcd, lo}, {&p.etcdPeer, lo}, {&p.dnsReady, lo},
		{&p.proxyHealthz, lo}, {&p.proxyMetrics, lo}, {&p.agentHealthz, lo}, {&p.agentReadOnly, lo},
	} {
		if *pick.port, err = freePort(pick.ip); err != nil {
			return err
		}
	}
	p.dns, err = freeUDPAndTCPPort(c.hostIP)
	if err != nil {
		return err
	}
	// The kubelet port is the well-known one: parts of the e2e framework
	// reach the node through the apiserver's node proxy on 10250, not on
	// the port the Node reports.
	p.kubelet = KubeletPort
	l, err := net.Listen("tcp", hostAddr(c.hostIP, KubeletPort))
	if err != nil {
		return fmt.Errorf("the kubelet port %d is taken on %s (is a kubelet running?): %w", KubeletPort, c.hostIP, err)
	}
	return l.Close()
}

// writeKubeconfig writes a kubeconfig for a client certificate.
func (c *Cluster) writeKubeconfig(path, cert, key string) error {
	return c.writeKubeconfigFor(path, fmt.Sprintf("client-certificate: %s\n    client-key: %s", cert, key))
}

// writeKubeconfigFor writes a kubeconfig of the apiserver whose user has
// the credentials user, YAML lines indented by four spaces after the
// first.
func (c *Cluster) writeKubeconfigFor(path, user string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: user
  user:
    %s
contexts:
- name: test
  context: {cluster: test, user: user}
current-context: test
`, c.APIServerURL(), c.ca.CertFile, user)
	return writeFile(path, []byte(cfg))
}

// stateFile is the cluster's record in its directory, read by Cleanup.
const stateFile = "cluster-state.json"

// state is what Cleanup needs to undo a cluster whose process died:
// kube-proxy's rules and the kernel settings it found.
type state struct {
	Dir       string            `json:"dir"`
	KubeProxy string            `json:"kubeProxy"`
	Sysctls   map[string]string `json:"sysctls"`
	// NodeDir is the agent's directory, once the node's containerd runs.
	NodeDir string `json:"nodeDir,omitempty"`
	// Chains are the KUBE-* iptables chains there before the cluster
	// started ("iptables/filter" -> names); the others go at the end.
	Chains map[string][]string `json:"chains"`
}

func (c *Cluster) saveState() error {
	st := state{Dir: c.dir, KubeProxy: c.opts.Bins.Proxy, Sysctls: c.saved, Chains: c.chains}
	if c.ctr != nil {
		st.NodeDir = c.nodeDir()
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal %s: %w", stateFile, err)
	}
	return writeFile(filepath.Join(c.dir, stateFile), data)
}
