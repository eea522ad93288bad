package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/cluster/certificate"
	"github.com/minikubelet/minikubelet/agent/cluster/events"
	"github.com/minikubelet/minikubelet/agent/cluster/objects"
	"github.com/minikubelet/minikubelet/agent/cluster/runtimeclass"
	"github.com/minikubelet/minikubelet/agent/cluster/services"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/sources"
	apisource "github.com/minikubelet/minikubelet/agent/sources/api"
	"github.com/minikubelet/minikubelet/internal/kubeclient"
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
	// StreamsWebSockets says the kubelet port serves exec, attach and
	// port-forward over WebSocket itself (the v5 channel protocol and the
	// SPDY tunnel): the Node declares ExtendWebSocketsToKubelet, so that
	// the apiserver passes kubectl's WebSockets through to the node instead
	// of translating them to SPDY, as it does for a kubelet of its version.
	StreamsWebSockets bool
	// CertDir is --cert-dir: where a managed client certificate is kept
	// (BootstrapKubeconfig, RotateCertificates).
	CertDir string
	// ServingCertDir, when set, is where the kubelet port's serving
	// certificate, requested from the apiserver (serverTLSBootstrap), is
	// kept; empty when the certificate comes from elsewhere.
	ServingCertDir string
	// SyncFrequency is --sync-frequency: how often pods' volumes read their
	// objects again, which decides when an object's watch is idle.
	SyncFrequency time.Duration
	Clock         clock.WithTicker
}

// Cluster holds node mode's parts that need no container runtime: the
// apiserver client, the pod source and the object cache. Built by New;
// Run runs the source and the cache; NewReporters builds the parts that
// report to the apiserver once the runtime answered. Its fields never
// change after New.
type Cluster struct {
	cfg     Config
	client  kubeclient.Interface
	source  *apisource.Source
	objects *objects.Cache
	// services lists every namespace's Services, for pods' env vars.
	services *services.Lister
	// events records the kubelet's events to the apiserver.
	events *events.Recorder
	// serving obtains the kubelet port's certificate; nil unless
	// cfg.ServingCertDir is set.
	serving *certificate.Manager
	// clientCert keeps the client certificate the client authenticates
	// with; nil unless it is managed (BootstrapKubeconfig or
	// RotateCertificates).
	clientCert *certificate.Manager
}

// New builds node mode's client, pod source and object cache from cfg;
// it returns nil, nil when cfg.Kubeconfig is empty (standalone mode). It
// reads the kubeconfig file and contacts no apiserver.
func New(cfg Config) (*Cluster, error) {
	if cfg.Kubeconfig == "" {
		return nil, nil
	}
	creds, err := loadCredentials(cfg)
	if err != nil {
		return nil, err
	}
	rc := userAgent(creds.rest, cfg.NodeName)
	rc.QPS = float32(cfg.KubeAPIQPS)
	rc.Burst = cfg.KubeAPIBurst
	// No client timeout: it would cut the informers' watches. The node
	// status and lease loops bound each of their calls instead.
	client, err := kubeclient.New(rc)
	if err != nil {
		return nil, fmt.Errorf("apiserver client from --kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	src, err := apisource.New(apisource.Config{Client: client, NodeName: cfg.NodeName})
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:        cfg,
		client:     client,
		source:     src,
		objects:    objects.New(objects.Config{Client: client, Clock: cfg.Clock, SyncFrequency: cfg.SyncFrequency}),
		services:   services.New(client),
		events:     events.New(client, cfg.NodeName),
		clientCert: creds.manager,
	}
	if cfg.ServingCertDir != "" {
		c.serving = certificate.New(certificate.Config{
			Kind:      certificate.Serving,
			NodeName:  cfg.NodeName,
			Addresses: nodeAddresses(cfg),
			Dir:       cfg.ServingCertDir,
			Rotate:    true,
			Clock:     cfg.Clock,
		})
	}
	return c, nil
}

// userAgent is a copy of rc that names the agent and the node to the
// apiserver.
func userAgent(rc *rest.Config, nodeName string) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "minikubelet/" + version.Version + " (" + nodeName + ")"
	return rc
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
func (c *Cluster) TokenReviews() kubeclient.Creator[*authenticationv1.TokenReview] {
	return c.client.TokenReviews()
}

// SubjectAccessReviews authorizes requests to the kubelet port.
func (c *Cluster) SubjectAccessReviews() kubeclient.Creator[*authorizationv1.SubjectAccessReview] {
	return c.client.SubjectAccessReviews()
}

// Objects serves the configMaps, secrets and tokens the node's pods refer
// to, to the volume plugins and pod workers.
func (c *Cluster) Objects() *objects.Cache { return c.objects }

// Services lists the cluster's Services, for the Service env vars of the
// node's pods.
func (c *Cluster) Services() *services.Lister { return c.services }

// RuntimeClasses resolves pods' runtimeClassName through the RuntimeClass
// API.
func (c *Cluster) RuntimeClasses() *runtimeclass.Resolver {
	return runtimeclass.New(c.client.RuntimeClasses())
}

// Events returns the recorder of the kubelet's events about pods and the
// node, sent to the apiserver while Run runs.
func (c *Cluster) Events() *events.Recorder { return c.events }

// Run runs the pod source, which sends its snapshots to out, the object
// cache, the Service informer, the event recorder and, when requested, the
// serving certificate's renewals until ctx is done.
func (c *Cluster) Run(ctx context.Context, out chan<- sources.Update) {
	runs := []func(context.Context){func(ctx context.Context) { c.source.Run(ctx, out) }, c.objects.Run, c.services.Run, c.events.Run}
	csrs := c.client.CertificateSigningRequests()
	for _, m := range []*certificate.Manager{c.clientCert, c.serving} {
		if m != nil {
			runs = append(runs, func(ctx context.Context) { m.Run(ctx, csrs) })
		}
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
