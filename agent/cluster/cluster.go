package cluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

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
	Clock   clock.WithTicker
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
	return &Cluster{
		cfg:     cfg,
		client:  client,
		source:  src,
		objects: objects.New(objects.Config{Client: client}),
	}, nil
}

// Objects serves the configMaps, secrets and tokens the node's pods refer
// to, to the volume plugins and pod workers.
func (c *Cluster) Objects() *objects.Cache { return c.objects }

// Run runs the pod source, which sends its snapshots to out, and the
// object cache until ctx is done.
func (c *Cluster) Run(ctx context.Context, out chan<- sources.Update) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		c.source.Run(ctx, out)
	}()
	go func() {
		defer wg.Done()
		c.objects.Run(ctx)
	}()
	wg.Wait()
}
