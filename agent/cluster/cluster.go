package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/cluster/certificate"
	"github.com/minikubelet/minikubelet/agent/cluster/objects"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/sources"
	apisource "github.com/minikubelet/minikubelet/agent/sources/api"
	"github.com/minikubelet/minikubelet/internal/version"
)

// Config configures node mode.
type Config struct {
	// NodeConfig holds the kubelet's node-mode flags; node mode is on when
	// its Kubeconfig is set.
	config.NodeConfig
	// NodeName names the Node, selects the node's pods and signs the
	// client's user agent. Required.
	NodeName string
	// HostIP is the Node's InternalIP address.
	HostIP string
	// RootDir is --root-dir: its filesystem is the Node's ephemeral
	// storage.
	RootDir string
	// KubeletPort is the kubelet port the Node reports
	// (status.daemonEndpoints); 0 when it is not served.
	KubeletPort int
	// ServingCertDir, when set, is where the kubelet port's serving
	// certificate, requested from the apiserver (serverTLSBootstrap), is
	// kept; empty when the certificate comes from elsewhere.
	ServingCertDir string
	Clock          clock.WithTicker
}

// Cluster holds node mode's parts that need no container runtime: the
// apiserver client, the pod source and the object cache. Built by New;
// Run runs the source and the cache; NewReporters builds the parts that
// report to the apiserver once the runtime answered. Its fields never
// change after New.
type Cluster struct {
	cfg     Config
	client  kubernetes.Interface
	source  *apisource.Source
	objects *objects.Cache
	// serving obtains the kubelet port's certificate; nil unless
	// cfg.ServingCertDir is set.
	serving *certificate.Manager
}

// New builds node mode's client, pod source and object cache from cfg;
// it returns nil, nil when cfg.Kubeconfig is empty (standalone mode). It
// reads the kubeconfig file and contacts no apiserver.
func New(cfg Config) (*Cluster, error) {
	if cfg.Kubeconfig == "" {
		return nil, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	rc.QPS = float32(cfg.KubeAPIQPS)
	rc.Burst = cfg.KubeAPIBurst
	rc.UserAgent = "minikubelet/" + version.Version + " (" + cfg.NodeName + ")"
	// No client timeout: it would cut the informers' watches. The node
	// status and lease loops bound each of their calls instead.
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("apiserver client from --kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	src, err := apisource.New(apisource.Config{Client: client, NodeName: cfg.NodeName})
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:     cfg,
		client:  client,
		source:  src,
		objects: objects.New(objects.Config{Client: client}),
	}
	if cfg.ServingCertDir != "" {
		c.serving = certificate.New(certificate.Config{
			Client:    client.CertificatesV1().CertificateSigningRequests(),
			NodeName:  cfg.NodeName,
			Addresses: nodeAddresses(cfg),
			Dir:       cfg.ServingCertDir,
			Clock:     cfg.Clock,
		})
	}
	return c, nil
}

// nodeAddresses are the Node's addresses: its InternalIP and Hostname.
func nodeAddresses(cfg Config) []v1.NodeAddress {
	return []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: cfg.HostIP}, {Type: v1.NodeHostName, Address: cfg.NodeName}}
}

// ServingCertificate returns the kubelet port's certificate issued by the
// apiserver, nil until there is one; nil when it is not requested there
// (ServingCertDir empty). Safe for concurrent use.
func (c *Cluster) ServingCertificate() func() *tls.Certificate {
	if c.serving == nil {
		return nil
	}
	return c.serving.Current
}

// TokenReviews checks bearer tokens for the kubelet port.
func (c *Cluster) TokenReviews() authenticationv1.TokenReviewInterface {
	return c.client.AuthenticationV1().TokenReviews()
}

// SubjectAccessReviews authorizes requests to the kubelet port.
func (c *Cluster) SubjectAccessReviews() authorizationv1.SubjectAccessReviewInterface {
	return c.client.AuthorizationV1().SubjectAccessReviews()
}

// Objects serves the configMaps, secrets and tokens the node's pods refer
// to, to the volume plugins and pod workers.
func (c *Cluster) Objects() *objects.Cache { return c.objects }

// Run runs the pod source, which sends its snapshots to out, the object
// cache and, when requested, the serving certificate's renewals until ctx
// is done.
func (c *Cluster) Run(ctx context.Context, out chan<- sources.Update) {
	runs := []func(context.Context){func(ctx context.Context) { c.source.Run(ctx, out) }, c.objects.Run}
	if c.serving != nil {
		runs = append(runs, c.serving.Run)
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	wg.Wait()
}
