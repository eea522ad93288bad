package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Agent names the node agent a cluster runs.
type Agent string

// The node agents a cluster can run.
const (
	// Minikubelet is minikubelet in node mode (Options.AgentBinary).
	Minikubelet Agent = "minikubelet"
	// Kubelet is the real kubelet of Bins.KubeVersion.
	Kubelet Agent = "kubelet"
	// NoAgent runs the control plane alone: no containerd, node, kube-proxy
	// or CoreDNS. Nodes join later as hollow nodes (StartHollow).
	NoAgent Agent = "none"
)

// Fixed addresses of every test cluster (one runs per host at a time).
const (
	// ServiceCIDR is --service-cluster-ip-range.
	ServiceCIDR = "10.96.0.0/16"
	// APIServiceIP is the kubernetes Service's ClusterIP.
	APIServiceIP = "10.96.0.1"
	// DNSServiceIP is the kube-dns Service's ClusterIP, the pods'
	// nameserver (the kubelet's clusterDNS).
	DNSServiceIP = "10.96.0.10"
	// DNSDomain is the cluster domain.
	DNSDomain = "cluster.local"
	// DefaultNodeName is the Node's name unless Options.NodeName says.
	DefaultNodeName = "mk-node-1"
	// KubeletPort is the node's kubelet port on the host IP.
	KubeletPort = 10250
	// DefaultRuntime is the bed runtime the node runs on.
	DefaultRuntime = "containerd-2.1"
)

// Options say what to run and where.
type Options struct {
	// Bed and Bins name the binaries and images (bed.json, cluster.json).
	// Required.
	Bed  *ctrdtest.Bed
	Bins *Bins
	// Dir is the base directory: the cluster's directory and its
	// containerd instance are made inside it, as direct children, so that
	// bedclean finds both after a crash. Required; keep it short (the
	// containerd socket path must stay under 100 bytes).
	Dir string
	// Agent is the node agent; AgentBinary is minikubelet's binary
	// (required for Minikubelet, ignored for Kubelet). AgentArgs are more
	// flags for it, after the harness's own.
	Agent       Agent
	AgentBinary string
	AgentArgs   []string
	// Runtime is the bed runtime to run; DefaultRuntime if empty.
	Runtime string
	// NodeName is the Node's name; DefaultNodeName if empty.
	NodeName string
	// HostIP is the address the apiserver advertises and the node
	// reports; the host's primary IPv4 address if nil. It must not be a
	// loopback address: pods reach the apiserver and CoreDNS through it.
	HostIP net.IP
	// NodeListsObjects binds a ClusterRole that lets system:nodes list and
	// watch configMaps and secrets in every namespace, which the Node
	// authorizer denies a production node. Neither agent needs it (both
	// watch each object their pods refer to on its own); it is off unless
	// a run asks, to compare runs with and without it.
	NodeListsObjects bool
	// MetricsServer runs metrics-server (Bins.MetricsServer) as a host
	// process behind the metrics.k8s.io APIService, scraping the node's
	// kubelet port, so that kubectl top works. Start then also waits for
	// the API to be available (not for the first figures). Off unless a
	// test asks: it costs a process and its scrapes.
	MetricsServer bool
	// Bootstrap joins the node with a bootstrap token instead of a client
	// certificate, on a fresh root dir: Start makes the token (its
	// Secret in kube-system; kubeadm's bindings let it request a node
	// client certificate, approved automatically) and a kubeconfig with
	// it, and starts the agent with that as --bootstrap-kubeconfig and a
	// --kubeconfig that does not exist yet, which the agent writes.
	Bootstrap bool
	// ClusterSigningDuration is the controller-manager's
	// --cluster-signing-duration, the lifetime of the certificates its
	// signer issues (the nodes'); its default, a year, when zero.
	ClusterSigningDuration time.Duration
	// AuditNode has kube-apiserver log every request of the node's user
	// (system:node:<name>), and no other, to an audit log (AuditLog), so
	// that the node's requests can be counted exactly between two marks
	// (AuditMark, NodeRequests): for the bench's comparison with the
	// kubelet. Off unless a run asks.
	AuditNode bool
	// LogDir, if set, receives a copy of every component's log when the
	// cluster stops.
	LogDir string
	// Logf, if set, is told what the harness does and how long it took.
	Logf func(format string, args ...any)
}

// Timings says how long the phases of Start took.
type Timings struct {
	ControlPlane time.Duration // etcd, apiserver, controller-manager, scheduler up
	Containerd   time.Duration // containerd up, images imported
	NodeReady    time.Duration // agent started to Node Ready, kube-proxy and CoreDNS up
	Total        time.Duration
}

// Cluster is a running one-node cluster. Stop is idempotent and safe to
// call from several goroutines; the other methods only read.
type Cluster struct {
	opts     Options
	dir      string
	hostIP   net.IP
	nodeName string
	ca       *CA
	files    files
	ports    ports
	unlock   func()
	saved    map[string]string
	// chains are the KUBE-* iptables chains there before the cluster.
	chains  map[string][]string
	ctr     *ctrdtest.Containerd
	timings Timings

	etcd, api, kcm, sched, proxy, dns, agent, metrics *proc

	// hollow are the hollow node sets StartHollow started, which Stop
	// stops first. Guarded by hollowMu.
	hollowMu sync.Mutex
	hollow   []*Hollow

	stopOnce sync.Once
	stopErr  error

	// bootstrapToken is the node's bootstrap token (Options.Bootstrap).
	bootstrapToken string
}

// files are the paths Start writes.
type files struct {
	adminKubeconfig, nodeKubeconfig             string
	kcmKubeconfig, schedKubeconfig              string
	proxyKubeconfig, dnsKubeconfig              string
	apiCert, apiKey, kubeletClientCert          string
	kubeletClientKey, nodeCert, nodeKey         string
	saKey, saPub                                string
	proxyConfig, corefile, kubeletConfig, state string
	// The node's bootstrap kubeconfig (Options.Bootstrap).
	bootstrapKubeconfig string
	// The aggregation layer: the front proxy's CA and the apiserver's
	// client certificate towards aggregated APIs; metrics-server's
	// kubeconfig and serving certificate.
	frontProxyCA, frontProxyCert, frontProxyKey string
	metricsKubeconfig, metricsCert, metricsKey  string
}

// ports are the TCP ports the components listen on.
type ports struct {
	api, etcd, etcdPeer, dns, dnsReady, proxyHealthz, proxyMetrics int
	agentHealthz, agentReadOnly, kubelet, metrics                  int
}

// Start brings up the cluster and returns once the Node is Ready, kube-proxy
// has synced its rules, CoreDNS answers and the default namespace has its
// ServiceAccount. It waits for a cluster another process runs on this host
// to stop first. On error, everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	c := &Cluster{opts: opts, nodeName: opts.NodeName, hostIP: opts.HostIP}
	c.unlock, err = lockHost(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop(context.WithoutCancel(ctx)))
		}
	}()
	if c.hostIP == nil {
		if c.hostIP, err = primaryIP(); err != nil {
			return nil, err
		}
	}
	if c.dir, err = os.MkdirTemp(opts.Dir, "cluster-"); err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	if c.saved, err = readTunables(); err != nil {
		return nil, err
	}
	if c.chains, err = kubeChains(ctx); err != nil {
		return nil, err
	}
	if err := c.saveState(); err != nil {
		return nil, err
	}
	// Pod to Service to pod on the node's bridge is routed (kube-proxy
	// DNATs it in PREROUTING), as kubeadm's preflight requires. It stays
	// on (see tunables).
	if err := setTunable("net/ipv4/ip_forward", "1"); err != nil {
		return nil, err
	}
	if err := c.writeFiles(); err != nil {
		return nil, err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	c.timings.ControlPlane = time.Since(t0)
	c.logf("control plane up in %v", c.timings.ControlPlane.Round(time.Millisecond))
	if opts.Agent == NoAgent {
		c.timings.Total = time.Since(t0)
		return c, c.waitDefaultServiceAccount(ctx)
	}
	t1 := time.Now()
	if err := c.startContainerd(ctx); err != nil {
		return nil, err
	}
	c.timings.Containerd = time.Since(t1)
	c.logf("containerd %s up with %d images in %v", c.ctr.Name(), len(opts.Bed.Images)+len(opts.Bins.Images), c.timings.Containerd.Round(time.Millisecond))
	t2 := time.Now()
	if err := c.startNode(ctx); err != nil {
		return nil, err
	}
	c.timings.NodeReady = time.Since(t2)
	c.timings.Total = time.Since(t0)
	c.logf("node %s (%s) Ready in %v; cluster up in %v", c.nodeName, opts.Agent, c.timings.NodeReady.Round(time.Millisecond), c.timings.Total.Round(time.Millisecond))
	return c, nil
}

func (o *Options) complete() error {
	var errs []error
	if o.Bed == nil || o.Bins == nil {
		errs = append(errs, errors.New("cluster: Options.Bed and Options.Bins are required"))
	} else if err := checkBed(o.Bed); err != nil {
		errs = append(errs, err)
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("cluster: Options.Dir is required"))
	}
	switch o.Agent {
	case Minikubelet:
		if o.AgentBinary == "" {
			errs = append(errs, errors.New("cluster: Options.AgentBinary is required to run minikubelet"))
		}
	case Kubelet, NoAgent:
	default:
		errs = append(errs, fmt.Errorf("cluster: Options.Agent %q: want %q, %q or %q", o.Agent, Minikubelet, Kubelet, NoAgent))
	}
	if o.MetricsServer && o.Bins != nil && o.Bins.MetricsServer == "" {
		errs = append(errs, errors.New("cluster: Options.MetricsServer: cluster.json names no metricsServer (run test/scripts/prepare-cluster.sh again)"))
	}
	if o.HostIP != nil && (o.HostIP.To4() == nil || o.HostIP.IsLoopback()) {
		errs = append(errs, fmt.Errorf("cluster: Options.HostIP %v: want a non-loopback IPv4 address (pods reach the apiserver through it)", o.HostIP))
	}
	if o.Runtime == "" {
		o.Runtime = DefaultRuntime
	}
	if o.NodeName == "" {
		o.NodeName = DefaultNodeName
	}
	return errors.Join(errs...)
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf("cluster: "+format, args...)
	}
}

// Kubeconfig is the path of an admin kubeconfig (system:masters).
func (c *Cluster) Kubeconfig() string { return c.files.adminKubeconfig }

// NodeKubeconfig is the path of the node's kubeconfig: a client
// certificate for system:node:<name> in system:nodes (with
// Options.Bootstrap, the one the agent wrote once it got it).
func (c *Cluster) NodeKubeconfig() string { return c.agentKubeconfig() }

// Kubectl is the path of kubectl, of the same version as the apiserver.
func (c *Cluster) Kubectl() string { return c.opts.Bed.Kubectl }

// NodeName is the Node's name.
func (c *Cluster) NodeName() string { return c.nodeName }

// HostIP is the address the apiserver advertises and the node reports.
func (c *Cluster) HostIP() net.IP { return c.hostIP }

// APIServerURL is the apiserver's URL on the host IP.
func (c *Cluster) APIServerURL() string {
	return "https://" + net.JoinHostPort(c.hostIP.String(), strconv.Itoa(c.ports.api))
}

// CA is the cluster's certificate authority.
func (c *Cluster) CA() *CA { return c.ca }

// Dir is the cluster's directory (certificates, configs, logs).
func (c *Cluster) Dir() string { return c.dir }

// APIServerPID and EtcdPID are the processes' IDs, for measuring them
// from outside (CPU time and RSS in /proc); 0 once they exited.
func (c *Cluster) APIServerPID() int { return c.api.pid() }

// EtcdPID: see APIServerPID.
func (c *Cluster) EtcdPID() int { return c.etcd.pid() }

// ControlPlaneError is nil while etcd, the apiserver, the
// controller-manager and the scheduler run; else it names the first that
// exited, with the end of its log (a controller-manager or scheduler that
// loses its leader lease exits).
func (c *Cluster) ControlPlaneError() error {
	for _, p := range []*proc{c.etcd, c.api, c.kcm, c.sched} {
		if p != nil && !p.running() {
			return p.errExited()
		}
	}
	return nil
}

// AgentLog is the path of the node agent's log.
func (c *Cluster) AgentLog() string { return filepath.Join(c.dir, "agent.log") }

// Containerd is the node's runtime.
func (c *Cluster) Containerd() *ctrdtest.Containerd { return c.ctr }

// Timings says how long Start took, phase by phase.
func (c *Cluster) Timings() Timings { return c.timings }

// RESTConfig is an admin client config.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.files.adminKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.files.adminKubeconfig, err)
	}
	rc.QPS, rc.Burst = 100, 200
	return rc, nil
}

// Client returns an admin client.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}
