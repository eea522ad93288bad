package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of the control plane's start.
const (
	apiReadyTimeout   = 2 * time.Minute
	leaderTimeout     = 2 * time.Minute
	controlPlanePoll  = 200 * time.Millisecond
	clusterName       = "minikubelet-test"
	serviceAccountIss = "https://kubernetes.default.svc." + DNSDomain
)

// startControlPlane starts etcd and the apiserver, creates the objects
// the cluster's host-process add-ons need, then the controller-manager and
// the scheduler, and waits until both hold their leader lease.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	if err := c.startEtcd(); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	client, err := c.Client()
	if err != nil {
		return err
	}
	if err := c.createAddonObjects(ctx, client); err != nil {
		return err
	}
	if c.opts.Bootstrap {
		if err := c.createBootstrapToken(ctx, client); err != nil {
			return err
		}
	}
	if c.opts.MetricsServer {
		if err := c.createMetricsServerObjects(ctx, client); err != nil {
			return err
		}
	}
	if err := c.startControllers(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, leaderTimeout)
	defer cancel()
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		err := poll(wctx, "wait for the "+lease+" leader lease", controlPlanePoll, func(ctx context.Context) error {
			l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				return fmt.Errorf("lease %s has no holder: %w", lease, errNotYet)
			}
			return nil
		}, c.api, c.kcm, c.sched)
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startEtcd() error {
	client := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcd)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdPeer)
	var err error
	c.etcd, err = launch("etcd", c.opts.Bed.Etcd, c.logPath("etcd"), nil,
		"--name", "default", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer,
		// A throwaway cluster: durability is not worth the fsyncs.
		"--unsafe-no-fsync", "--log-level", "warn")
	return err
}

// startAPIServer runs kube-apiserver as a production cluster has it
// (kubeadm's flags): Node and RBAC authorization, NodeRestriction,
// client certificates of the cluster CA, bootstrap tokens, signed
// service-account tokens, and its own client certificate towards kubelets,
// whose serving certificates it checks against the cluster CA. The
// aggregation layer is on as kubeadm sets it up (request headers from the
// front proxy's CA, the front-proxy-client certificate towards aggregated
// APIs), and routes to an APIService's endpoints rather than its
// ClusterIP: an aggregated API here (metrics-server) is a host process
// behind a Service without selector, and the apiserver, itself a host
// process, then does not depend on kube-proxy's rules for the host's own
// traffic. It listens on, and advertises, the host IP (the kubernetes
// Service's endpoint).
func (c *Cluster) startAPIServer(ctx context.Context) error {
	f := &c.files
	audit, err := c.auditArgs()
	if err != nil {
		return err
	}
	c.api, err = launch("kube-apiserver", c.opts.Bed.KubeAPIServer, c.logPath("kube-apiserver"), nil, append(audit,
		"--etcd-servers", "http://127.0.0.1:"+strconv.Itoa(c.ports.etcd),
		"--advertise-address", c.hostIP.String(), "--bind-address", c.hostIP.String(),
		"--secure-port", strconv.Itoa(c.ports.api),
		"--tls-cert-file", f.apiCert, "--tls-private-key-file", f.apiKey,
		"--client-ca-file", c.ca.CertFile,
		"--kubelet-client-certificate", f.kubeletClientCert, "--kubelet-client-key", f.kubeletClientKey,
		"--kubelet-certificate-authority", c.ca.CertFile,
		"--kubelet-preferred-address-types", "InternalIP,Hostname",
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--enable-bootstrap-token-auth",
		"--service-account-key-file", f.saPub,
		"--service-account-signing-key-file", f.saKey,
		"--service-account-issuer", serviceAccountIss,
		"--service-cluster-ip-range", ServiceCIDR,
		"--requestheader-client-ca-file", f.frontProxyCA,
		"--requestheader-allowed-names", frontProxyUser,
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-uid-headers", "X-Remote-Uid",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", f.frontProxyCert, "--proxy-client-key-file", f.frontProxyKey,
		"--enable-aggregator-routing=true",
		"--allow-privileged",
		"--profiling=false",
		"--cert-dir", filepath.Join(c.dir, "apiserver-certs"),
		"-v", "1",
	)...)
	if err != nil {
		return err
	}
	client, err := c.Client()
	if err != nil {
		return err
	}
	rest := client.Discovery().RESTClient()
	wctx, cancel := context.WithTimeout(ctx, apiReadyTimeout)
	defer cancel()
	return poll(wctx, "wait for kube-apiserver /readyz", controlPlanePoll, func(ctx context.Context) error {
		_, err := rest.Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}, c.api, c.etcd)
}

// leaderElection are the leader election flags of the controller-manager
// and the scheduler. Each is the only candidate, and one that fails to
// renew its lease within the deadline exits: with the defaults (15s lease,
// 10s deadline) an apiserver slowed down by a hundred nodes registering at
// once (make scale) or a busy host cost the cluster its controllers, and a
// node's not-ready taint then stays for good. A minute of slack keeps them.
var leaderElection = []string{"--leader-elect-lease-duration", "90s", "--leader-elect-renew-deadline", "60s", "--leader-elect-retry-period", "5s"}

// startControllers starts kube-controller-manager (every controller, the
// CSR signer with the cluster CA, service-account credentials per
// controller, as kubeadm) and kube-scheduler. Neither serves HTTPS: the
// harness watches their leader leases instead.
func (c *Cluster) startControllers() error {
	f := &c.files
	var signing []string
	if c.opts.ClusterSigningDuration != 0 {
		signing = []string{"--cluster-signing-duration", c.opts.ClusterSigningDuration.String()}
	}
	var err error
	c.kcm, err = launch("kube-controller-manager", c.opts.Bins.ControllerManager, c.logPath("kube-controller-manager"), nil, append(append(signing,
		"--kubeconfig", f.kcmKubeconfig,
		"--secure-port", "0",
		"--controllers", "*,bootstrapsigner,tokencleaner",
		"--use-service-account-credentials",
		"--service-account-private-key-file", f.saKey,
		"--root-ca-file", c.ca.CertFile,
		"--cluster-signing-cert-file", c.ca.CertFile, "--cluster-signing-key-file", c.ca.KeyFile,
		"--service-cluster-ip-range", ServiceCIDR,
		"--allocate-node-cidrs=false",
		"--cluster-name", clusterName,
		"--profiling=false",
		"-v", "1",
	), leaderElection...)...)
	if err != nil {
		return err
	}
	c.sched, err = launch("kube-scheduler", c.opts.Bins.Scheduler, c.logPath("kube-scheduler"), nil, append([]string{
		"--kubeconfig", f.schedKubeconfig,
		"--secure-port", "0",
		"--profiling=false",
		"-v", "1",
	}, leaderElection...)...)
	return err
}

// logPath is where component name logs.
func (c *Cluster) logPath(name string) string { return filepath.Join(c.dir, name+".log") }

// ignoreExists turns "already exists" into nil, for idempotent creates.
func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// hostAddr is ip:port.
func hostAddr(ip net.IP, port int) string { return net.JoinHostPort(ip.String(), strconv.Itoa(port)) }
