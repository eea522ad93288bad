package agent

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/allocatable"
	"github.com/minikubelet/minikubelet/agent/allocation"
	"github.com/minikubelet/minikubelet/agent/cluster"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/containerlogs"
	"github.com/minikubelet/minikubelet/agent/housekeeping"
	"github.com/minikubelet/minikubelet/agent/imagegc"
	"github.com/minikubelet/minikubelet/agent/machine"
	"github.com/minikubelet/minikubelet/agent/notify"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/agent/shutdown"
	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/apparmor"
	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/internal/crilog"
	"github.com/minikubelet/minikubelet/internal/dns"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/memtrim"
	"github.com/minikubelet/minikubelet/internal/metrics"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
	"github.com/minikubelet/minikubelet/volumes"
)

// runtimeParts are the parts that need the container runtime, built at
// once by newRuntimeParts after the CRI connection is made. Run publishes
// them once (Agent.runtime), starts the runners and runs the loop. No
// field changes after newRuntimeParts.
type runtimeParts struct {
	status *status.Manager
	stats  *stats.Provider
	// streams is the runtime service the streaming endpoints call.
	streams server.StreamRuntime
	pleg    lifecycleEvents
	workers *podworkers.Workers
	// loop is the syncLoop, which dispatches to the workers.
	loop *syncLoop
	// runners are the parts' loops that run beside the syncLoop: the
	// PLEG, housekeeping, log rotation, image GC, node-pressure eviction,
	// and as configured, graceful node shutdown and node mode's
	// reporters.
	runners []func(context.Context)
}

// probeResultsCap buffers probe results for the syncLoop.
const probeResultsCap = 64

// baseParts are the parts New builds that the runtime parts are built
// from. None of their fields changes after New.
type baseParts struct {
	cfg            config.Config
	clock          clock.WithTicker
	nodeName       string
	hostIP         string
	memoryCapacity int64
	metrics        *metrics.Metrics
	// pods are the pods the sources want; the syncLoop writes them.
	pods   *podmanager.Manager
	merger *podconfig.Merger
	cache  *pleg.Cache
	// cluster holds node mode's parts; nil in standalone mode.
	cluster    *cluster.Cluster
	health     *health
	firstSyncs *notify.FirstSyncs
	// activity tells the memtrim loop that containers started or ended.
	activity *memtrim.Activity
}

// newRuntimeParts builds the parts that need the runtime, in dependency
// order: cgroups and stats; volumes; the prober and the status manager;
// the pod workers; the PLEG; housekeeping, log rotation, image GC and
// node-pressure eviction;
// graceful node shutdown and node mode's reporters, as configured; and the
// syncLoop that ties them together. It calls the runtime once (its cgroup
// driver) and makes the QoS cgroups; it starts nothing.
func newRuntimeParts(ctx context.Context, b *baseParts, clients *cri.Clients) (*runtimeParts, error) {
	cg, err := newCgroups(ctx, b.cfg, clients.Runtime, b.clock)
	if err != nil {
		return nil, err
	}
	na, err := nodeAllocatable(b.cfg, b.memoryCapacity)
	if err != nil {
		return nil, err
	}
	if err := enforceAllocatable(ctx, b.cfg, cg, na); err != nil {
		return nil, err
	}
	allocatableResources := na.Allocatable()
	statsConfig := stats.Config{
		NodeName:      b.nodeName,
		Pods:          stats.NewPodLister(stats.PodListerDeps{Pods: b.pods, Runtime: b.cache, Cgroups: cg}),
		Cgroups:       cg,
		Files:         cg.NewStatsFiles(),
		Clock:         b.clock,
		PodsCgroup:    cg.PodsCgroup(),
		MachineCores:  runtime.NumCPU(),
		MachineMemory: uint64(b.memoryCapacity),
		Fs:            stats.FsConfig{RootDir: b.cfg.RootDir, PodLogsDir: b.cfg.PodLogsDir, Images: clients.Images, Runtime: clients.Runtime},
	}
	statsProvider := stats.New(statsConfig)
	// Pod volumes live under <root-dir>/pods; a standalone agent has no
	// apiserver to serve configMaps, secrets or tokens.
	volumesConfig := volumes.Config{RootDir: b.cfg.RootDir, NodeAllocatable: allocatableResources, Clock: b.clock}
	// Image volumes: what the runtime's version says it mounts.
	imageMount, imageSubPath := cri.ImageVolumes(clients.RuntimeName, clients.RuntimeVersion)
	volumesConfig.ImageVolumes = volumes.ImageVolumeSupport{Mount: imageMount, SubPath: imageSubPath, Runtime: clients.RuntimeName + " " + clients.RuntimeVersion}
	if b.cluster != nil {
		volumesConfig.Objects = b.cluster.Objects()
	}
	podVolumes := volumes.New(volumesConfig)

	// Probe results go to the syncLoop; probe workers learn of their
	// containers from the statuses the status manager stores, which also
	// go to the apiserver in node mode.
	probeResults := make(chan prober.Result, probeResultsCap)
	proberConfig := prober.Config{
		Runtime: clients.Runtime,
		Clock:   b.clock,
		Results: probeResults,
		HostIP:  b.hostIP,
		Observe: func(run prober.Run) {
			b.metrics.ObserveProbe(string(run.Type), run.Result, run.Duration)
			b.metrics.Probes.Observe(probeTarget(run.Pod, run.Container, run.Type), run.Result, run.Duration)
		},
		Forget: func(pod *v1.Pod, container string, t prober.Type) {
			b.metrics.Probes.Forget(probeTarget(pod, container, t))
		},
	}
	if b.cluster != nil {
		proberConfig.Events = b.cluster.Events()
	}
	probes := prober.New(proberConfig)
	// The resources granted to and applied to the pods' containers, for
	// in-place resize. usage and wake are set below, before any worker
	// runs: a pod's grant counts while the node has the pod, and freed
	// resources wake the pods whose resize is deferred.
	var usage housekeeping.Usage
	var wake func([]types.UID)
	podResources := allocation.New(ctx, allocation.Config{
		Path:    filepath.Join(b.cfg.RootDir, allocation.StateFile),
		InUse:   func(uid types.UID) bool { return usage.Uses(uid) },
		OnFreed: func(uids []types.UID) { wake(uids) },
		Clock:   b.clock,
	})
	// reporters is node mode's; it is built below, from the status
	// manager, and set before newRuntimeParts returns, so before any pod
	// worker runs and stores a status.
	var reporters *cluster.Reporters
	statusManager := status.NewManager(status.Config{
		Clock:       b.clock,
		HostIP:      b.hostIP,
		RuntimeName: clients.RuntimeName,
		Probes:      probes,
		OnStatus: func(uid types.UID, st v1.PodStatus) {
			probes.SetPodStatus(uid, st)
			if reporters != nil {
				reporters.Notify(uid)
			}
		},
		Resources: podResources,
	})

	syncerConfig := podworkers.SyncerConfig{
		Runtime:        clients.Runtime,
		Images:         clients.Images,
		Cache:          b.cache,
		Status:         statusManager,
		Probes:         probes,
		Clock:          b.clock,
		NodeName:       b.nodeName,
		HostIP:         b.hostIP,
		RootDir:        b.cfg.RootDir,
		PodLogsDir:     b.cfg.PodLogsDir,
		Volumes:        podVolumes,
		BackOffInitial: 10 * time.Second,
		BackOffMax:     b.cfg.MaxContainerRestartPeriod,
		BackOffReset:   10 * time.Minute,
		// The kubelet's image pull back-off; credentials come from
		// <root-dir>/config.json, read at each pull.
		ImagePullBackOffInitial: 10 * time.Second,
		ImagePullBackOffMax:     5 * time.Minute,
		Cgroups:                 cg,
		MemoryCapacity:          b.memoryCapacity,
		// Env resourceFieldRefs read it for limits a container does not set.
		NodeAllocatable: allocatableResources,
		DNS:             newDNSConfigurer(b.cfg.DNSConfig, b.hostIP),
		ClusterDomain:   b.cfg.ClusterDomain,
		Resources:       podResources,
		// A burst of pods gets its sandboxes a few at a time.
		MaxParallelSandboxStarts: b.cfg.SandboxStartWindow(),
	}
	features := runtimeFeatures(ctx, clients.Runtime)
	syncerConfig.UsernsSupport = features.HandlerSupportsUserNamespaces
	if users := newUserNamespaces(ctx, b.cfg.RootDir); users != nil {
		syncerConfig.UserNamespaces = users
	}
	if b.cluster != nil {
		// configMapKeyRef, secretKeyRef, envFrom and imagePullSecrets.
		syncerConfig.Objects = b.cluster.Objects()
		// Service env vars; a standalone agent gives none, as the
		// kubelet without an apiserver.
		syncerConfig.Services = b.cluster.Services()
		syncerConfig.Events = b.cluster.Events()
		syncerConfig.RuntimeClasses = b.cluster.RuntimeClasses()
	}
	workers := podworkers.New(podworkers.Config{
		Syncer:         b.firstSyncs.Wrap(newMeasuredSyncer(podworkers.NewSyncer(syncerConfig), b.metrics, statusManager, b.clock)),
		Cache:          b.cache,
		Clock:          b.clock,
		ResyncInterval: b.cfg.SyncFrequency,
		// Node mode deletes a pod being deleted from the API once it is
		// gone from the node: tell it at once rather than at its next
		// check a second later.
		OnGone: func(uid types.UID) {
			if reporters != nil {
				reporters.Notify(uid)
			}
		},
	})
	lifecycle := newPLEG(b, clients)
	b.metrics.RegisterPLEG(lifecycle)
	b.metrics.RegisterRunning(b.cache)

	usage = housekeeping.Usage{Pods: b.pods, Workers: workers, Runtime: b.cache}
	wake = func(uids []types.UID) {
		for _, uid := range uids {
			workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, UID: uid})
		}
	}
	podDirs := housekeeping.NewPodDirs(housekeeping.PodDirsConfig{Dirs: podVolumes, LogsDir: b.cfg.PodLogsDir, InUse: usage.InUse, Clock: b.clock})
	imageGC, err := newImageGC(b.cfg, clients, b.clock, b.metrics.ImageGarbageCollected.WithLabelValues("space").Inc, imageVolumeRefs(b.pods))
	if err != nil {
		return nil, err
	}
	evictionManager := newEviction(b, evictionDeps{statsConfig: statsConfig, cgroups: cg, workers: workers, statuses: statusManager, images: imageGC, clients: clients, thresholds: na.HardEviction})
	// Admission: the kubelet's eviction handler (no new pod under pressure
	// but critical ones) first, node allocatable's resource fit after
	// the pods count.
	admit, err := newAdmission(b.cfg, kernelRelease(ctx), features, apparmor.HostSupport(), nodeHandlers{
		pressure: resultOf(evictionManager.AdmitNew),
		fit:      resultOf(allocatable.Fit(allocatableResources)),
	})
	if err != nil {
		return nil, err
	}
	runners := []func(context.Context){
		lifecycle.Run,
		podDirs.Run,
		housekeeping.NewCgroups(housekeeping.CgroupsConfig{Cgroups: cg, Uses: usage.Uses, Clock: b.clock}).Run,
		newLogRotation(b.cfg, clients.Runtime, b.cache, b.clock).Run,
		imageGC.Run,
		podResources.Run,
		evictionManager.Run,
		statsProvider.Run, // the stats' filesystem figures, refreshed when read
	}

	// Graceful node shutdown: its requests reach the syncLoop.
	var nodePods *shutdown.NodePods
	if b.cfg.ShutdownGracePeriod > 0 {
		nodePods = shutdown.NewNodePods(shutdown.NodePodsConfig{Pods: b.pods, Workers: workers, Status: statusManager})
		runners = append(runners, shutdown.New(shutdown.Config{
			GracePeriod:             b.cfg.ShutdownGracePeriod,
			CriticalPodsGracePeriod: b.cfg.ShutdownGracePeriodCriticalPods,
			Node:                    nodePods,
			LogindConfDir:           b.cfg.LogindConfDir,
			Clock:                   b.clock,
		}).Run)
	}
	if b.cluster != nil {
		nodeFeats, runtimeHandlers := nodeFeatures(features)
		reporters = b.cluster.NewReporters(cluster.ReportersConfig{
			Pods:            b.pods,
			Statuses:        statusManager,
			Gone:            podGone(lifecycle, workers, b.cache),
			Ready:           b.health.Ready,
			SystemInfo:      machine.SystemInfo(clients.RuntimeName, clients.RuntimeVersion),
			MemoryCapacity:  b.memoryCapacity,
			Features:        nodeFeats,
			RuntimeHandlers: runtimeHandlers,
			Pressure:        evictionManager.Pressure,
			Allocatable:     allocatableResources,
		})
		runners = append(runners, reporters.Run)
	}

	return &runtimeParts{
		status:  statusManager,
		stats:   statsProvider,
		streams: clients.Runtime,
		pleg:    lifecycle,
		workers: workers,
		loop: &syncLoop{
			clock:        b.clock,
			beat:         b.health.beat,
			pods:         b.pods,
			merger:       b.merger,
			cache:        b.cache,
			workers:      workers,
			probes:       probes,
			statuses:     statusManager,
			pleg:         lifecycle,
			probeResults: probeResults,
			shutdown:     nodePods,
			evictions:    evictionManager.Requests(),
			usage:        usage,
			orphans:      housekeeping.NewOrphans(housekeeping.OrphansConfig{NodeName: b.nodeName, Sources: b.merger, Runtime: b.cache, Known: usage.Known}),
			podDirs:      podDirs,
			admission:    admit,
			events:       podEvents(b),
			rejected:     func(reason string) { b.metrics.AdmissionRejections.WithLabelValues(reason).Inc() },
			activity:     b.activity,
		},
		runners: runners,
	}, nil
}

// newPLEG builds the PLEG of the configured mode. In auto and evented mode
// it is an Evented PLEG, which relists by itself where the runtime serves
// no events (containerd 1.6) or its stream keeps failing.
func newPLEG(b *baseParts, clients *cri.Clients) lifecycleEvents {
	generic := pleg.NewGeneric(pleg.GenericConfig{
		Runtime:       clients.Runtime,
		Cache:         b.cache,
		RelistPeriod:  b.cfg.PLEGRelistPeriod,
		Clock:         b.clock,
		ObserveRelist: func(d time.Duration) { b.metrics.ObserveRelist(b.clock.Now().Add(-d), d) },
	})
	if b.cfg.PLEGModeToRun() == config.PLEGModeRelist {
		return generic
	}
	return pleg.NewEvented(pleg.EventedConfig{
		Runtime:            clients.Runtime,
		Cache:              b.cache,
		Relister:           generic,
		SafetyRelistPeriod: b.cfg.EventedPLEGRelistPeriod,
		RelistPeriod:       b.cfg.PLEGRelistPeriod,
		Clock:              b.clock,
		OnConnectionError:  b.metrics.EventedPLEGConnectionErrors.Inc,
	})
}

// newImageGC returns the image garbage collector of the configured policy;
// onRemoved counts each image it removes; inUse names the images of the
// pods' image volumes, which it keeps.
func newImageGC(cfg config.Config, clients *cri.Clients, clk clock.WithTicker, onRemoved func(), inUse func() []string) (*imagegc.Manager, error) {
	m, err := imagegc.New(imagegc.Config{
		Policy: imagegc.Policy{
			HighThresholdPercent: cfg.ImageGCHighThresholdPercent,
			LowThresholdPercent:  cfg.ImageGCLowThresholdPercent,
			MinAge:               cfg.ImageMinimumGCAge,
		},
		Runtime:      clients.Runtime,
		Images:       clients.Images,
		Clock:        clk,
		Period:       cfg.ImageGCPeriod,
		SandboxImage: cfg.PodInfraContainerImage,
		OnRemoved:    onRemoved,
		InUse:        inUse,
	})
	if err != nil {
		return nil, fmt.Errorf("image garbage collection: %w", err)
	}
	return m, nil
}

// imageVolumeRefs returns the image references of the image volumes of
// the pods the node runs.
func imageVolumeRefs(pods interface{ List() []*v1.Pod }) func() []string {
	return func() []string {
		var out []string
		for _, p := range pods.List() {
			for _, v := range p.Spec.Volumes {
				if v.Image != nil && v.Image.Reference != "" {
					out = append(out, v.Image.Reference)
				}
			}
		}
		return out
	}
}

// reopener is the CRI call log rotation needs.
type reopener interface {
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// newLogRotation rotates the logs of the running containers the PLEG cache
// knows, at --container-log-max-size keeping --container-log-max-files.
func newLogRotation(cfg config.Config, rt reopener, cache *pleg.Cache, clk clock.WithTicker) *containerlogs.Manager {
	// Validate checked the quantity.
	size := resource.MustParse(cfg.ContainerLogMaxSize)
	return containerlogs.New(containerlogs.Config{
		Runtime:  rt,
		MaxSize:  size.Value(),
		MaxFiles: cfg.ContainerLogMaxFiles,
		Interval: cfg.ContainerLogMonitorInterval,
		Clock:    clk,
		Running:  containerlogs.RunningIn(cache),
	})
}

// runtimeConfigReader is the CRI call that says the runtime's cgroup
// driver (containerd 2.x answers it; 1.6 answers Unimplemented).
type runtimeConfigReader interface {
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)
}

// newCgroups makes the cgroup manager, with the QoS cgroups, for the
// runtime's cgroup driver.
func newCgroups(ctx context.Context, cfg config.Config, rt runtimeConfigReader, clk clock.Clock) (*cgroups.Manager, error) {
	cg, err := cgroups.New(ctx, cgroups.Config{
		Root:            cfg.CgroupRoot,
		Driver:          cgroupDriver(ctx, rt, cfg.CgroupDriver),
		PerQOS:          cfg.CgroupsPerQOS,
		BlkioAccounting: cfg.CgroupV1BlkioAccounting,
		PodPidsLimit:    cfg.PodPidsLimit,
		Clock:           clk,
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Cgroups ready", "version", cg.Version(), "driver", cg.Driver(), "root", cfg.CgroupRoot, "perQOS", cfg.CgroupsPerQOS)
	return cg, nil
}

// cgroupDriver is the runtime's cgroup driver when it says, else flag
// (--cgroup-driver), as the kubelet chooses it.
func cgroupDriver(ctx context.Context, rt runtimeConfigReader, flag string) string {
	logger := klog.FromContext(ctx)
	// containerd 1.6 answers Unimplemented, which cri-client would log
	// as an error: the agent reports what deserves it below.
	resp, err := rt.RuntimeConfig(crilog.QuietErrors(ctx))
	if err != nil {
		if !kubecontainer.IsUnimplemented(err) {
			logger.Info("Could not ask the runtime for its cgroup driver; using --cgroup-driver", "driver", flag, "err", err)
		}
		return flag
	}
	if resp.GetLinux() == nil {
		return flag
	}
	driver := cgroups.DriverCgroupfs
	if resp.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD {
		driver = cgroups.DriverSystemd
	}
	if driver != flag {
		logger.Info("Using the container runtime's cgroup driver rather than --cgroup-driver", "runtime", driver, "flag", flag)
	}
	return driver
}

// podGone reports whether the node holds nothing of a pod any more: no
// worker, and nothing in the runtime as of a relist (not before the first
// one: until then the node does not know what it holds).
func podGone(lifecycle lifecycleEvents, workers *podworkers.Workers, cache *pleg.Cache) func(types.UID) bool {
	return func(uid types.UID) bool {
		if lifecycle.LastSeen().IsZero() || slices.Contains(workers.Known(), uid) {
			return false
		}
		st, err := cache.Get(uid)
		return err == nil && (st == nil || len(st.Sandboxes)+len(st.Containers) == 0)
	}
}

// runtimeView reads the published runtime parts for the parts built
// before them: the PLEG for the health checks, the pods' status for the
// HTTP endpoints' pod views, and the stats provider.
type runtimeView struct {
	runtime *atomic.Pointer[runtimeParts]
}

// plegOf is health.runtime.
func (v runtimeView) plegOf() (healthChecker, bool) {
	if p := v.runtime.Load(); p != nil {
		return p.pleg, true
	}
	return nil, false
}

// Get returns the status manager's status of pod uid; none before the
// runtime has answered.
func (v runtimeView) Get(uid types.UID) (v1.PodStatus, bool) {
	if p := v.runtime.Load(); p != nil {
		return p.status.Get(uid)
	}
	return v1.PodStatus{}, false
}

// stats is server.Config.Stats: nil until the runtime has answered.
func (v runtimeView) stats() server.Stats {
	if p := v.runtime.Load(); p != nil {
		return p.stats
	}
	return nil
}

// streams is server.StreamConfig.Runtime: nil until the runtime has
// answered.
func (v runtimeView) streams() server.StreamRuntime {
	if p := v.runtime.Load(); p != nil {
		return p.streams
	}
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

// probeTarget names a probe in /metrics/probes.
func probeTarget(pod *v1.Pod, container string, t prober.Type) metrics.ProbeTarget {
	return metrics.ProbeTarget{Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID), Container: container, Type: string(t)}
}

// newDNSConfigurer makes pods' DNS from the DNS flags; the node's IP
// chooses the loopback resolver of pods that get no DNS (--resolv-conf "").
func newDNSConfigurer(cfg config.DNSConfig, hostIP string) *dns.Configurer {
	c := &dns.Configurer{ClusterDomain: cfg.ClusterDomain, ResolvConf: cfg.ResolvConf}
	for _, s := range cfg.ClusterDNS {
		// Checked by config.Validate.
		if ip := net.ParseIP(s); ip != nil {
			c.ClusterDNS = append(c.ClusterDNS, ip)
		}
	}
	if ip := net.ParseIP(hostIP); ip != nil {
		c.NodeIPs = []net.IP{ip}
	}
	return c
}
