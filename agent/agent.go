package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/cluster"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/imageimport"
	"github.com/minikubelet/minikubelet/agent/machine"
	"github.com/minikubelet/minikubelet/agent/notify"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/podview"
	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/agent/sources/file"
	httpsource "github.com/minikubelet/minikubelet/agent/sources/http"
	"github.com/minikubelet/minikubelet/internal/cleanup"
	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/internal/memtrim"
	"github.com/minikubelet/minikubelet/internal/metrics"
	"github.com/minikubelet/minikubelet/internal/sdnotify"
	"github.com/minikubelet/minikubelet/pleg"
)

// Channel capacities. Each channel has one writer and one reader, is made
// by Run, and is never closed (its goroutines end on ctx instead).
const (
	// sourceUpdatesCap buffers source snapshots for the merge.
	sourceUpdatesCap = 16
	// podUpdatesCap buffers merged operations for the syncLoop; the merge
	// blocks when it is full, so nothing is dropped.
	podUpdatesCap = 64
)

// cleanupTimeout bounds work done after the agent's ctx was cancelled.
const cleanupTimeout = 5 * time.Second

// The binary's pages start-up touched are given back (internal/memtrim)
// trimAfter the start, then every trimEvery, and trimQuiet after the
// containers last started or ended (PLEG events), at most once every
// trimGap, so that the agent's RSS follows the code it runs rather than
// the code it ran once: a batch of pod starts leaves some 4 MiB of the
// binary resident that the running pods do not use (make bench, node
// mode, 110 pods).
const (
	trimAfter = time.Minute
	trimEvery = 10 * time.Minute
	trimQuiet = 30 * time.Second
	trimGap   = time.Minute
)

// Agent is a minikubelet. New builds it; Run runs it. No field changes
// after New: the parts that need the container runtime are built by Run
// once it answers, and published once, in runtime.
type Agent struct {
	baseParts
	// sources are the pod sources: the file source, the manifest URL's and
	// node mode's (cluster), as configured.
	sources []podSource
	// endpoints configures the HTTP server, which Run starts.
	endpoints server.Config
	notify    *notify.Loop
	// runtime holds the parts that need the runtime: nil until Run has
	// built them, then set once. The HTTP server, the health checks and
	// the service manager's loop read it.
	runtime *atomic.Pointer[runtimeParts]
}

// podSource is a pod source (agent/sources/...): Run sends its snapshots
// to out until ctx is done.
type podSource interface {
	Run(ctx context.Context, out chan<- sources.Update)
}

// notifier is the service manager (internal/sdnotify.Notifier).
type notifier interface {
	Notify(ctx context.Context, states ...string) error
	WatchdogInterval() time.Duration
}

var _ notifier = (*sdnotify.Notifier)(nil)

// Deps are what tests may replace; zero values get the real thing.
type Deps struct {
	Clock clock.WithTicker
	// Notifier is the service manager; by default the one $NOTIFY_SOCKET
	// names (internal/sdnotify), if any.
	Notifier notifier
}

// New checks cfg and builds the agent's parts that need no container
// runtime, in dependency order. It does no I/O beyond reading the node's
// name, address, memory and swaps (--fail-swap-on), the --kubeconfig file
// and the certificates it names, and, to bootstrap a client certificate,
// writing --kubeconfig.
func New(cfg config.Config, deps Deps) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.FailSwapOn && machine.SwapOn() {
		// The kubelet's words.
		return nil, errors.New("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Notifier == nil {
		n, err := sdnotify.FromEnv(os.Getenv, os.Getpid())
		if err != nil {
			return nil, fmt.Errorf("service manager environment: %w", err)
		}
		deps.Notifier = n
	}
	nodeName, err := cfg.NodeName()
	if err != nil {
		return nil, err
	}
	hostIP, err := machine.HostIP(cfg.NodeIP)
	if err != nil {
		return nil, err
	}
	// Without a way to authenticate, the kubelet port is not served (Run
	// says so) nor reported.
	port := cfg.Port
	if !cfg.CanAuthenticate() {
		port = 0
	}
	srcs, node, err := newSources(cfg, nodeName, hostIP, port, deps.Clock)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	m.RegisterNodeName(nodeName)
	var podOpts []podmanager.Option
	if node != nil {
		// The objects the node's pods refer to are watched while a pod
		// that has not finished refers to them.
		podOpts = append(podOpts, podmanager.WithReferences(node.Objects()))
	}
	pods := podmanager.New(podOpts...)
	merger := podconfig.New(configuredSources(cfg), podconfig.WithErrorCounter(func(source string) {
		m.ManifestErrors.WithLabelValues(source).Inc()
	}))
	cache := pleg.NewCache()
	runtime := new(atomic.Pointer[runtimeParts])
	h := &health{clock: deps.Clock, runtimeEndpoint: cfg.RuntimeEndpoint, runtime: runtimeView{runtime}.plegOf}
	firstSyncs := notify.NewFirstSyncs()
	view := podview.New(podview.Config{Pods: pods, Statuses: runtimeView{runtime}, Runtime: cache})
	return &Agent{
		baseParts: baseParts{
			cfg:            cfg,
			clock:          deps.Clock,
			nodeName:       nodeName,
			hostIP:         hostIP,
			memoryCapacity: machine.MemoryCapacity(),
			metrics:        m,
			pods:           pods,
			merger:         merger,
			cache:          cache,
			cluster:        node,
			health:         h,
			firstSyncs:     firstSyncs,
			activity:       memtrim.NewActivity(),
		},
		sources: srcs,
		endpoints: server.Config{
			NodeName:                nodeName,
			Address:                 cfg.Address,
			Port:                    port,
			ReadOnlyPort:            cfg.ReadOnlyPort,
			HealthzAddress:          cfg.HealthzBindAddress,
			HealthzPort:             cfg.HealthzPort,
			SocketPath:              cfg.SocketPath,
			TLS:                     servingTLS(cfg, nodeName, hostIP, node),
			Auth:                    portAuth(cfg, node),
			EnableDebuggingHandlers: cfg.EnableDebuggingHandlers,
			Configz:                 cfg.KubeletConfiguration(),
			Pods:                    view,
			Checks:                  h.checks(),
			ManifestErrors:          merger,
			Metrics:                 m.Handler(),
			Logs:                    view,
			Running:                 view,
			Stats:                   runtimeView{runtime}.stats,
			Clock:                   deps.Clock,
			Stream:                  server.StreamConfig{Targets: view, Runtime: runtimeView{runtime}.streams},
			ProbeMetrics:            m.Probes.Handler(),
			// The kubelet's gate for /containerLogs?stream=.
			SplitLogStreams: cfg.FeatureGates["PodLogsQuerySplitStreams"],
		},
		notify: notify.New(notify.Config{
			Notifier:        deps.Notifier,
			Clock:           deps.Clock,
			RuntimeEndpoint: cfg.RuntimeEndpoint,
			Agent:           h,
			Sources:         merger,
			Pods:            pods,
			FirstSyncs:      firstSyncs,
		}),
		runtime: runtime,
	}, nil
}

// servingTLS is where the kubelet port's certificate comes from: the
// apiserver (--rotate-server-certificates), the files, or a self-signed
// one for the node's name and address, and loopback.
func servingTLS(cfg config.Config, nodeName, hostIP string, node *cluster.Cluster) server.TLS {
	t := server.TLS{
		CertFile: cfg.TLSCertFile,
		KeyFile:  cfg.TLSPrivateKeyFile,
		CertDir:  cfg.CertDirectory(),
		Hosts:    []string{nodeName, hostIP, "localhost", "127.0.0.1"},
	}
	if node != nil {
		t.Rotating = node.ServingCertificate()
	}
	return t
}

// portAuth is who may use the kubelet port: in node mode the apiserver
// checks tokens and authorizes, as configured.
func portAuth(cfg config.Config, node *cluster.Cluster) server.AuthConfig {
	a := server.AuthConfig{
		ClientCAFile:    cfg.ClientCAFile,
		TokenAuthFile:   cfg.TokenAuthFile,
		TokenCacheTTL:   cfg.AuthenticationTokenWebhookCacheTTL,
		Anonymous:       cfg.AnonymousAuth,
		AuthorizedTTL:   cfg.AuthorizationWebhookCacheAuthorizedTTL,
		UnauthorizedTTL: cfg.AuthorizationWebhookCacheUnauthorizedTTL,
	}
	if node != nil && cfg.TokenWebhook() {
		a.TokenReviews = node.TokenReviews()
	}
	if node != nil && cfg.AuthorizationModeToUse() == config.AuthorizationWebhook {
		a.SubjectAccessReviews = node.SubjectAccessReviews()
	}
	return a
}

// newSources builds the configured pod sources and, with --kubeconfig,
// node mode's parts, whose pod source is one of them; the Node reports
// kubeletPort.
func newSources(cfg config.Config, nodeName, hostIP string, kubeletPort int, clk clock.WithTicker) ([]podSource, *cluster.Cluster, error) {
	srcs := []podSource{file.New(file.Config{
		Path:           cfg.PodManifestPath,
		NodeName:       nodeName,
		CheckFrequency: cfg.FileCheckFrequency,
		Clock:          clk,
	})}
	if cfg.ManifestURL != "" {
		urlSource, err := httpsource.New(httpsource.Config{
			URL:            cfg.ManifestURL,
			Header:         cfg.ManifestURLHeader,
			CheckFrequency: cfg.HTTPCheckFrequency,
			NodeName:       nodeName,
			Clock:          clk,
		})
		if err != nil {
			return nil, nil, err
		}
		srcs = append(srcs, urlSource)
	}
	clusterCfg := cluster.Config{NodeConfig: cfg.NodeConfig, NodeName: nodeName, HostIP: hostIP, RootDir: cfg.RootDir, KubeletPort: kubeletPort,
		StreamsWebSockets: cfg.EnableDebuggingHandlers, SyncFrequency: cfg.SyncFrequency, CertDir: cfg.CertDirectory(), Clock: clk}
	if cfg.RotateServerCertificates {
		clusterCfg.ServingCertDir = cfg.CertDirectory()
	}
	node, err := cluster.New(clusterCfg)
	if err != nil {
		return nil, nil, err
	}
	if node != nil {
		srcs = append(srcs, node)
	}
	return srcs, node, nil
}

// configuredSources are the sources the merge waits for before the agent
// may delete anything.
func configuredSources(cfg config.Config) []string {
	out := []string{sources.File}
	if cfg.ManifestURL != "" {
		out = append(out, sources.HTTP)
	}
	if cfg.Kubeconfig != "" {
		out = append(out, sources.API)
	}
	return out
}

// Run runs the agent until ctx is cancelled; call it once. It returns an
// error only for what stops the agent from starting (a port in use, a
// cgroup root it cannot make); everything else is retried. Pods keep
// running after Run returns.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting minikubelet", "node", a.nodeName, "hostIP", a.hostIP, "manifests", a.cfg.PodManifestPath, "runtime", a.cfg.RuntimeEndpoint)
	if a.cfg.Port != 0 && a.endpoints.Port == 0 {
		logger.Info("Not serving the kubelet port: there is no way to authenticate its clients (give --client-ca-file or --token-auth-file, or run in node mode with --kubeconfig); the local command line uses the socket", "port", a.cfg.Port, "socket", a.cfg.SocketPath)
	}
	if a.cfg.RotateCertificates && a.cfg.Kubeconfig == "" {
		logger.Info("rotateCertificates (--rotate-certificates) has no effect standalone: there is no client certificate to renew without --kubeconfig")
	}
	if a.cfg.ReadOnlyPort != 0 && !isLoopback(a.cfg.Address) {
		logger.Info("Warning: the read-only port serves the pods (their specs included) and their metrics without authentication to every host that reaches it; a kubelet config file turns it off (readOnlyPort: 0)", "address", a.cfg.Address, "port", a.cfg.ReadOnlyPort)
	}
	srv, err := server.Listen(ctx, a.endpoints)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	goRun(func(ctx context.Context) {
		if err := srv.Serve(ctx); err != nil {
			logger.Error(err, "HTTP server failed")
		}
	})
	goRun(a.notify.Run)
	goRun(memtrim.Loop{Clock: a.clock, After: trimAfter, Every: trimEvery, Activity: a.activity, Quiet: trimQuiet, MinGap: trimGap}.Run)

	// Sources start before the runtime is reached, so that manifest errors
	// are reported even while the runtime is down; their updates wait in
	// podUpdates and the merge until the syncLoop runs.
	sourceUpdates := make(chan sources.Update, sourceUpdatesCap)
	podUpdates := make(chan podconfig.PodUpdate, podUpdatesCap)
	for _, src := range a.sources {
		goRun(func(ctx context.Context) { src.Run(ctx, sourceUpdates) })
	}
	goRun(func(ctx context.Context) { a.merger.Run(ctx, sourceUpdates, podUpdates) })

	clients, err := cri.Connect(ctx, a.clock, a.cfg.RuntimeEndpoint, a.cfg.RuntimeRequestTimeout)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	defer closeClients(ctx, clients)
	clients.Runtime, clients.Images = a.metrics.InstrumentRuntime(a.clock, clients.Runtime, clients.Images)
	parts, err := newRuntimeParts(ctx, &a.baseParts, clients)
	if err != nil {
		return err
	}
	a.runtime.Store(parts)
	defer parts.workers.Wait()
	// Before any pod is synced: see ImportRootDir.
	imageimport.ImportRootDir(ctx, imageimport.RootDirConfig{RootDir: a.cfg.RootDir, RuntimeEndpoint: a.cfg.RuntimeEndpoint, Images: clients.Images, Clock: a.clock})
	for _, run := range parts.runners {
		goRun(run)
	}
	parts.loop.run(ctx, podUpdates)
	logger.Info("Stopping minikubelet; pods keep running")
	return nil
}

// isLoopback reports whether address only accepts connections from this
// host.
func isLoopback(address string) bool {
	ip := net.ParseIP(address)
	return ip != nil && ip.IsLoopback()
}

// closeClients closes the CRI connections once ctx was cancelled.
func closeClients(ctx context.Context, clients *cri.Clients) {
	closeCtx, cancel := cleanup.Context(ctx, cleanupTimeout)
	defer cancel()
	_ = clients.Runtime.Close(closeCtx)
	_ = clients.Images.Close(closeCtx)
}
