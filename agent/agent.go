package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/cluster"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/housekeeping"
	"github.com/minikubelet/minikubelet/agent/machine"
	"github.com/minikubelet/minikubelet/agent/notify"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/podview"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/agent/shutdown"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/agent/sources/file"
	httpsource "github.com/minikubelet/minikubelet/agent/sources/http"
	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/cleanup"
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
	cfg      config.Config
	clock    clock.WithTicker
	nodeName string
	hostIP   string

	metrics *metrics.Metrics
	pods    *podmanager.Manager
	merger  *podconfig.Merger
	cache   *pleg.Cache
	// workers is set by Run before the syncLoop starts and used only by
	// Run's goroutine.
	workers *podworkers.Workers
	// probes is set by Run before the syncLoop starts.
	probes *prober.Manager
	// nodeShutdown is set by Run before the syncLoop starts; nil when
	// graceful node shutdown is off.
	nodeShutdown *shutdown.NodePods
	// status and pleg are set by Run once the runtime answers; the HTTP
	// server reads them before that.
	status atomic.Pointer[status.Manager]
	pleg   atomic.Pointer[plegHandle]
	// runtimeReady is set once the runtime has answered.
	runtimeReady atomic.Bool
	// syncLoopTick is the UnixNano time of the syncLoop's last iteration.
	syncLoopTick atomic.Int64
	// podDirs cleans up gone pods' directories and orphans finds pods no
	// source wants; set by Run before the syncLoop starts.
	podDirs *housekeeping.PodDirs
	orphans *housekeeping.Orphans
	usage   housekeeping.Usage
	// stats is set by Run once the runtime answers (agent/cgroups.go).
	stats atomic.Pointer[stats.Provider]
	// memoryCapacity is the node's memory in bytes; 0 when unknown.
	memoryCapacity int64

	// notifier and firstSyncs serve the service manager (agent/notify).
	notifier   notifier
	firstSyncs *notify.FirstSyncs
	// cluster holds node mode's parts; nil in standalone mode.
	cluster *cluster.Cluster
}

// notifier is the service manager (internal/sdnotify.Notifier).
type notifier interface {
	Notify(ctx context.Context, states ...string) error
	WatchdogInterval() time.Duration
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
func New(cfg config.Config, deps Deps) (*Agent, error) {
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
	nodeName, err := cfg.NodeName()
	if err != nil {
		return nil, err
	}
	ip, err := machine.HostIP(cfg.NodeIP)
	if err != nil {
		return nil, err
	}
	node, err := cluster.New(cluster.Config{NodeConfig: cfg.NodeConfig, NodeName: nodeName, HostIP: ip, RootDir: cfg.RootDir, Clock: deps.Clock})
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	return &Agent{
		cluster:  node,
		cfg:      cfg,
		clock:    deps.Clock,
		nodeName: nodeName,
		hostIP:   ip,
		metrics:  m,
		pods:     podmanager.New(),
		merger: podconfig.New(configuredSources(cfg), podconfig.WithErrorCounter(func(source string) {
			m.ManifestErrors.WithLabelValues(source).Inc()
		})),
		cache:          pleg.NewCache(),
		memoryCapacity: machine.MemoryCapacity(),
		notifier:       deps.Notifier,
		firstSyncs:     notify.NewFirstSyncs(),
	}, nil
}

// Run runs the agent until ctx is cancelled. It returns an error only for
// what stops the agent from starting (a port in use); everything else is
// retried. Pods keep running after Run returns.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting minikubelet", "node", a.nodeName, "hostIP", a.hostIP, "manifests", a.cfg.PodManifestPath, "runtime", a.cfg.RuntimeEndpoint)

	view := podview.New(podview.Config{Pods: a.pods, Statuses: lateStatuses{&a.status}, Runtime: a.cache})
	srv, err := server.Listen(server.Config{
		Address:        a.cfg.Address,
		ReadOnlyPort:   a.cfg.ReadOnlyPort,
		HealthzAddress: a.cfg.HealthzBindAddress,
		HealthzPort:    a.cfg.HealthzPort,
		Pods:           view,
		Checks: []server.Check{
			{Name: "runtime", Check: a.runtimeHealthy},
			{Name: "pleg", Check: a.plegHealthy},
			{Name: "syncloop", Check: a.syncLoopHealthy},
		},
		ManifestErrors: a.merger,
		Metrics:        a.metrics.Handler(),
		Logs:           view,
		Auth:           a.cfg.ServerAuth(),
		Running:        view,
		Stats: func() server.Stats {
			if p := a.stats.Load(); p != nil {
				return p
			}
			return nil
		},
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
	goRun(notify.New(notify.Config{
		Notifier:        a.notifier,
		Clock:           a.clock,
		RuntimeEndpoint: a.cfg.RuntimeEndpoint,
		Agent:           a,
		Sources:         a.merger,
		Pods:            a.pods,
		FirstSyncs:      a.firstSyncs,
	}).Run)

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
	if a.cluster != nil {
		goRun(func(ctx context.Context) { a.cluster.Run(ctx, sourceUpdates) })
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
		closeCtx, cancel := cleanup.Context(ctx, cleanupTimeout)
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
	volumesConfig := volumes.Config{RootDir: a.cfg.RootDir, NodeAllocatable: machine.Allocatable(a.cfg.RootDir), Clock: a.clock}
	if a.cluster != nil {
		volumesConfig.Objects = a.cluster.Objects()
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
	if a.cluster != nil {
		// configMapKeyRef, secretKeyRef, envFrom and imagePullSecrets.
		syncerConfig.Objects = a.cluster.Objects()
	}
	syncer := podworkers.NewSyncer(syncerConfig)
	a.workers = podworkers.New(podworkers.Config{
		Syncer:         a.firstSyncs.Wrap(syncer),
		Cache:          a.cache,
		Clock:          a.clock,
		ResyncInterval: a.cfg.SyncFrequency,
	})
	defer a.workers.Wait()
	a.usage = housekeeping.Usage{Pods: a.pods, Workers: a.workers, Runtime: a.cache}
	a.orphans = housekeeping.NewOrphans(housekeeping.OrphansConfig{NodeName: a.nodeName, Sources: a.merger, Runtime: a.cache, Known: a.usage.Known})
	a.podDirs = housekeeping.NewPodDirs(housekeeping.PodDirsConfig{Dirs: podVolumes, LogsDir: a.cfg.PodLogsDir, InUse: a.usage.InUse, Clock: a.clock})
	goRun(a.podDirs.Run)
	goRun(housekeeping.NewCgroups(housekeeping.CgroupsConfig{Cgroups: cg, Uses: a.usage.Uses, Clock: a.clock}).Run)
	lifecycle := a.newPLEG(clients)
	a.pleg.Store(&plegHandle{lifecycle})
	a.metrics.RegisterPLEG(lifecycle)
	goRun(lifecycle.Run)
	goRun(a.newLogRotation(clients.Runtime).Run)
	if a.cfg.ShutdownGracePeriod > 0 {
		a.nodeShutdown = shutdown.NewNodePods(shutdown.NodePodsConfig{Pods: a.pods, Workers: a.workers, Status: statusManager})
		goRun(shutdown.New(shutdown.Config{
			GracePeriod:             a.cfg.ShutdownGracePeriod,
			CriticalPodsGracePeriod: a.cfg.ShutdownGracePeriodCriticalPods,
			Node:                    a.nodeShutdown,
			LogindConfDir:           a.cfg.LogindConfDir,
			Clock:                   a.clock,
		}).Run)
	}
	goRun(imageGC.Run)
	if a.cluster != nil {
		reporters := a.cluster.NewReporters(cluster.ReportersConfig{
			Pods:           a.pods,
			Statuses:       statusManager,
			Gone:           a.podGone,
			Ready:          a.nodeReady,
			SystemInfo:     machine.SystemInfo(clients.RuntimeName, clients.RuntimeVersion),
			MemoryCapacity: a.memoryCapacity,
		})
		statuses.notify = reporters.Notify
		goRun(reporters.Run)
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
	if a.cfg.PLEGModeToRun() == config.PLEGModeRelist {
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

// cleanupTimeout bounds work done after the agent's ctx was cancelled.
const cleanupTimeout = 5 * time.Second

// statusFanout passes each pod status the status manager stores on to the
// prober and, in node mode, to the apiserver status syncer.
type statusFanout struct {
	probes func(uid types.UID, st v1.PodStatus)
	// notify is set before the syncLoop starts, nil in standalone mode.
	notify func(uid types.UID)
}

func (f *statusFanout) onStatus(uid types.UID, st v1.PodStatus) {
	f.probes(uid, st)
	if f.notify != nil {
		f.notify(uid)
	}
}

// nodeReady is the Node's Ready condition: the runtime answers, the PLEG
// relists and the syncLoop turns.
func (a *Agent) nodeReady() error {
	for _, check := range []func() error{a.runtimeHealthy, a.plegHealthy, a.syncLoopHealthy} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// podGone reports whether the node holds nothing of a pod any more: no
// worker, and nothing in the runtime as of a relist (not before the first
// one: until then the node does not know what it holds).
func (a *Agent) podGone(uid types.UID) bool {
	p := a.pleg.Load()
	if p == nil || p.LastSeen().IsZero() || a.workers == nil {
		return false
	}
	for _, known := range a.workers.Known() {
		if known == uid {
			return false
		}
	}
	st, err := a.cache.Get(uid)
	return err == nil && (st == nil || len(st.Sandboxes)+len(st.Containers) == 0)
}

// lateStatuses reads the status manager once it exists; before, no pod
// has a status.
type lateStatuses struct {
	m *atomic.Pointer[status.Manager]
}

func (l lateStatuses) Get(uid types.UID) (v1.PodStatus, bool) {
	if m := l.m.Load(); m != nil {
		return m.Get(uid)
	}
	return v1.PodStatus{}, false
}

// RuntimeReady, SyncLoopStarted, SyncLoopHealthy and PLEGHealthy tell the
// service manager how the agent does.
func (a *Agent) RuntimeReady() bool     { return a.runtimeReady.Load() }
func (a *Agent) SyncLoopStarted() bool  { return a.syncLoopTick.Load() != 0 }
func (a *Agent) SyncLoopHealthy() error { return a.syncLoopHealthy() }
func (a *Agent) PLEGHealthy() error     { return a.plegHealthy() }
