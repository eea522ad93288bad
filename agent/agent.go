package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/agent/sources/file"
	httpsource "github.com/minikubelet/minikubelet/agent/sources/http"
	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/internal/metrics"
	"github.com/minikubelet/minikubelet/internal/probe"
	"github.com/minikubelet/minikubelet/internal/sdnotify"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
	"github.com/minikubelet/minikubelet/volumes"
)

// Channel capacities. Each channel has one writer and one reader, is owned
// by Run, and is never closed (its goroutines end on ctx instead).
const (
	// sourceUpdatesCap buffers source snapshots for the merge.
	sourceUpdatesCap = 16
	// podUpdatesCap buffers merged operations for the syncLoop; the merge
	// blocks when it is full, so nothing is dropped.
	podUpdatesCap = 64
	// probeResultsCap buffers probe results for the syncLoop.
	probeResultsCap = 64
)

// Agent is a running minikubelet. Create it with New and start it with Run.
type Agent struct {
	cfg      Config
	clock    clock.WithTicker
	nodeName string
	hostIP   string

	metrics *metrics.Metrics
	pods    *podManager
	merger  *podconfig.Merger
	cache   *pleg.Cache
	// workers is set by Run before the syncLoop starts and used only by
	// Run's goroutine.
	workers *podworkers.Workers
	// probes is set by Run before the syncLoop starts.
	probes *prober.Manager
	// nodeShutdown is set by Run before the syncLoop starts; nil when
	// graceful node shutdown is off.
	nodeShutdown *nodeShutdown
	// status and pleg are set by Run once the runtime answers; the HTTP
	// server reads them before that.
	status atomic.Pointer[status.Manager]
	pleg   atomic.Pointer[plegHandle]
	// runtimeReady is set once the runtime has answered.
	runtimeReady atomic.Bool
	// syncLoopTick is the UnixNano time of the syncLoop's last iteration.
	syncLoopTick atomic.Int64
	// podDirs cleans up gone pods' directories; set by Run before the
	// syncLoop starts.
	podDirs *podDirCleaner
	// stats is set by Run once the runtime answers (agent/cgroups.go).
	stats atomic.Pointer[stats.Provider]
	// memoryCapacity is the node's memory in bytes; 0 when unknown.
	memoryCapacity int64

	// notifier and firstSyncs serve the service manager (notify.go).
	notifier   notifier
	firstSyncs *firstSyncs
	// node holds node mode's parts (node.go); nil in standalone mode.
	node *nodeMode
}

// Deps are what tests may replace; zero values get the real thing.
type Deps struct {
	Clock clock.WithTicker
	// Notifier is the service manager; by default the one $NOTIFY_SOCKET
	// names (internal/sdnotify), if any.
	Notifier notifier
}

// New checks cfg and prepares an agent; it does no I/O beyond reading the
// node's name and address.
func New(cfg Config, deps Deps) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
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
	nodeName, err := cfg.nodeName()
	if err != nil {
		return nil, err
	}
	ip, err := hostIP(cfg.NodeIP)
	if err != nil {
		return nil, err
	}
	node, err := newNodeMode(cfg, nodeName)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	return &Agent{
		node:     node,
		cfg:      cfg,
		clock:    deps.Clock,
		nodeName: nodeName,
		hostIP:   ip,
		metrics:  m,
		pods:     newPodManager(),
		merger: podconfig.New(configuredSources(cfg), podconfig.WithErrorCounter(func(source string) {
			m.ManifestErrors.WithLabelValues(source).Inc()
		})),
		cache:          pleg.NewCache(),
		memoryCapacity: machineMemory(),
		notifier:       deps.Notifier,
		firstSyncs:     newFirstSyncs(),
	}, nil
}

// Run runs the agent until ctx is cancelled. It returns an error only for
// what stops the agent from starting (a port in use); everything else is
// retried. Pods keep running after Run returns.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting minikubelet", "node", a.nodeName, "hostIP", a.hostIP, "manifests", a.cfg.PodManifestPath, "runtime", a.cfg.RuntimeEndpoint)

	srv, err := server.Listen(server.Config{
		Address:        a.cfg.Address,
		ReadOnlyPort:   a.cfg.ReadOnlyPort,
		HealthzAddress: a.cfg.HealthzBindAddress,
		HealthzPort:    a.cfg.HealthzPort,
		Pods:           a,
		Checks: []server.Check{
			{Name: "runtime", Check: a.runtimeHealthy},
			{Name: "pleg", Check: a.plegHealthy},
			{Name: "syncloop", Check: a.syncLoopHealthy},
		},
		ManifestErrors:  a.merger,
		Metrics:         a.metrics.Handler(),
		Logs:            a,
		Auth:            a.cfg.serverAuth(),
		Running:         a,
		StatsSummary:    http.HandlerFunc(a.serveStatsSummary),
		CadvisorMetrics: http.HandlerFunc(a.serveCadvisor),
		Clock:           a.clock,
	})
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
	goRun(a.notifyLoop)

	// Sources start before the runtime is reached, so that manifest errors
	// are reported even while the runtime is down; their updates wait in
	// podUpdates and the merge until the syncLoop runs.
	sourceUpdates := make(chan sources.Update, sourceUpdatesCap)
	podUpdates := make(chan podconfig.PodUpdate, podUpdatesCap)
	fileSource := file.New(file.Config{
		Path:           a.cfg.PodManifestPath,
		NodeName:       a.nodeName,
		CheckFrequency: a.cfg.FileCheckFrequency,
		Clock:          a.clock,
	})
	goRun(func(ctx context.Context) { fileSource.Run(ctx, sourceUpdates) })
	if a.cfg.ManifestURL != "" {
		urlSource, err := httpsource.New(httpsource.Config{
			URL:            a.cfg.ManifestURL,
			Header:         a.cfg.ManifestURLHeader,
			CheckFrequency: a.cfg.HTTPCheckFrequency,
			NodeName:       a.nodeName,
			Clock:          a.clock,
		})
		if err != nil {
			return err
		}
		goRun(func(ctx context.Context) { urlSource.Run(ctx, sourceUpdates) })
	}
	if a.node != nil {
		goRun(func(ctx context.Context) { a.node.source.Run(ctx, sourceUpdates) })
		goRun(a.node.objects.Run)
	}
	goRun(func(ctx context.Context) { a.merger.Run(ctx, sourceUpdates, podUpdates) })

	clients, err := cri.Connect(ctx, a.clock, a.cfg.RuntimeEndpoint, a.cfg.RuntimeRequestTimeout)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	a.runtimeReady.Store(true)
	defer func() {
		closeCtx, cancel := cleanupContext()
		defer cancel()
		_ = clients.Runtime.Close(closeCtx)
		_ = clients.Images.Close(closeCtx)
	}()
	// Before any pod is synced: see importImages.
	a.importImages(ctx, clients)
	imageGC, err := a.newImageGC(clients)
	if err != nil {
		return err
	}

	cg, err := a.setupCgroups(ctx, clients.Runtime)
	if err != nil {
		return err
	}
	// Pod volumes live under <root-dir>/pods; a standalone agent has no
	// apiserver to serve configMaps, secrets or tokens.
	allocatable := nodeAllocatable(a.cfg.RootDir)
	volumesConfig := volumes.Config{RootDir: a.cfg.RootDir, NodeAllocatable: allocatable, Clock: a.clock}
	if a.node != nil {
		volumesConfig.Objects = a.node.objects
	}
	podVolumes := volumes.New(volumesConfig)
	// Probe results go to the syncLoop; probe workers learn of their
	// containers from the statuses the status manager stores.
	probeResults := make(chan prober.Result, probeResultsCap)
	a.probes = prober.New(prober.Config{
		Runtime: clients.Runtime,
		Clock:   a.clock,
		Results: probeResults,
		HostIP:  a.hostIP,
		Observe: func(t prober.Type, r probe.Result, d time.Duration) { a.metrics.ObserveProbe(string(t), r, d) },
	})
	statuses := &statusFanout{probes: a.probes.SetPodStatus}
	statusManager := status.NewManager(status.Config{
		Clock:       a.clock,
		HostIP:      a.hostIP,
		RuntimeName: clients.RuntimeName,
		Probes:      a.probes,
		OnStatus:    statuses.onStatus,
	})
	statuses.manager = statusManager
	a.status.Store(statusManager)
	syncerConfig := podworkers.SyncerConfig{
		Runtime:        clients.Runtime,
		Images:         clients.Images,
		Cache:          a.cache,
		Status:         statusManager,
		Probes:         a.probes,
		Clock:          a.clock,
		NodeName:       a.nodeName,
		HostIP:         a.hostIP,
		RootDir:        a.cfg.RootDir,
		PodLogsDir:     a.cfg.PodLogsDir,
		Volumes:        podVolumes,
		BackOffInitial: 10 * time.Second,
		BackOffMax:     a.cfg.MaxContainerRestartPeriod,
		BackOffReset:   10 * time.Minute,
		// The kubelet's image pull back-off; credentials come from
		// <root-dir>/config.json, read at each pull.
		ImagePullBackOffInitial: 10 * time.Second,
		ImagePullBackOffMax:     5 * time.Minute,
		Cgroups:                 cg,
		MemoryCapacity:          a.memoryCapacity,
	}
	// Env resourceFieldRefs read it for limits a container does not set.
	syncerConfig.NodeAllocatable = allocatable
	if a.node != nil {
		// configMapKeyRef, secretKeyRef, envFrom and imagePullSecrets.
		syncerConfig.Objects = a.node.objects
	}
	syncer := podworkers.NewSyncer(syncerConfig)
	a.workers = podworkers.New(podworkers.Config{
		Syncer:         a.firstSyncs.wrap(syncer),
		Cache:          a.cache,
		Clock:          a.clock,
		ResyncInterval: a.cfg.SyncFrequency,
	})
	defer a.workers.Wait()
	a.podDirs = newPodDirCleaner(podDirCleanerConfig{Dirs: podVolumes, LogsDir: a.cfg.PodLogsDir, InUse: a.podsInUse, Clock: a.clock})
	goRun(a.podDirs.run)
	goRun(func(ctx context.Context) { a.cleanupCgroups(ctx, cg) })
	lifecycle := a.newPLEG(clients)
	a.pleg.Store(&plegHandle{lifecycle})
	a.metrics.RegisterPLEG(lifecycle)
	goRun(lifecycle.Run)
	goRun(a.newLogRotation(clients.Runtime).Run)
	a.nodeShutdown = a.startNodeShutdown(goRun, statusManager)
	goRun(imageGC.Run)
	if a.node != nil {
		a.startNodeMode(goRun, clients, statuses)
	}

	a.syncLoop(ctx, podUpdates, lifecycle.Watch(), probeResults)
	logger.Info("Stopping minikubelet; pods keep running")
	return nil
}

// lifecycleEvents is what the agent needs of a PLEG, relisting or evented.
type lifecycleEvents interface {
	Run(ctx context.Context)
	Watch() <-chan *pleg.Event
	Healthy() error
	Mode() string
	LastSeen() time.Time
	Dropped() uint64
}

var (
	_ lifecycleEvents = (*pleg.Generic)(nil)
	_ lifecycleEvents = (*pleg.Evented)(nil)
)

// plegHandle lets the PLEG, an interface, sit in an atomic.Pointer.
type plegHandle struct{ lifecycleEvents }

// newPLEG builds the PLEG of the configured mode. In auto and evented mode
// it is an Evented PLEG, which relists by itself where the runtime serves
// no events (containerd 1.6) or its stream keeps failing.
func (a *Agent) newPLEG(clients *cri.Clients) lifecycleEvents {
	generic := pleg.NewGeneric(pleg.GenericConfig{
		Runtime:       clients.Runtime,
		Cache:         a.cache,
		RelistPeriod:  a.cfg.PLEGRelistPeriod,
		Clock:         a.clock,
		ObserveRelist: func(d time.Duration) { a.metrics.PLEGRelistDuration.Observe(d.Seconds()) },
	})
	if a.cfg.plegMode() == PLEGModeRelist {
		return generic
	}
	return pleg.NewEvented(pleg.EventedConfig{
		Runtime:            clients.Runtime,
		Cache:              a.cache,
		Relister:           generic,
		SafetyRelistPeriod: a.cfg.EventedPLEGRelistPeriod,
		RelistPeriod:       a.cfg.PLEGRelistPeriod,
		Clock:              a.clock,
		OnConnectionError:  a.metrics.EventedPLEGConnectionErrors.Inc,
	})
}

// configuredSources are the sources the merge waits for before the agent
// may delete anything.
func configuredSources(cfg Config) []string {
	out := []string{sources.File}
	if cfg.ManifestURL != "" {
		out = append(out, sources.HTTP)
	}
	if cfg.Kubeconfig != "" {
		out = append(out, sources.API)
	}
	return out
}

// PodsWithStatus returns the node's pods with their current status, for
// /pods. The pods are copies the caller may keep.
func (a *Agent) PodsWithStatus() []*v1.Pod {
	pods := a.pods.list()
	statuses := a.status.Load()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		cp := p.DeepCopy()
		if statuses != nil {
			if st, ok := statuses.Get(p.UID); ok {
				cp.Status = *st.DeepCopy()
			}
		}
		if cp.Status.Phase == "" {
			cp.Status.Phase = v1.PodPending
		}
		out = append(out, cp)
	}
	return out
}

func (a *Agent) runtimeHealthy() error {
	if !a.runtimeReady.Load() {
		return fmt.Errorf("container runtime at %s has not answered yet", a.cfg.RuntimeEndpoint)
	}
	return nil
}

func (a *Agent) plegHealthy() error {
	p := a.pleg.Load()
	if p == nil {
		return errors.New("pleg not started")
	}
	return p.Healthy()
}

// syncLoopHealthy fails when the syncLoop has not turned for a while: it
// turns at least every sync tick.
func (a *Agent) syncLoopHealthy() error {
	last := a.syncLoopTick.Load()
	if last == 0 {
		return errors.New("sync loop not started")
	}
	if age := a.clock.Since(time.Unix(0, last)); age > syncLoopStallThreshold {
		return fmt.Errorf("sync loop last turned %v ago; threshold is %v", age.Round(time.Second), syncLoopStallThreshold)
	}
	return nil
}

// cleanupContext bounds work done after the agent's ctx was cancelled.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}
