package cluster

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/cluster/mirror"
	"github.com/minikubelet/minikubelet/agent/cluster/nodestatus"
	"github.com/minikubelet/minikubelet/agent/cluster/podstatus"
	"github.com/minikubelet/minikubelet/agent/machine"
)

// localPods are the pods the node's sources want (agent/podmanager).
type localPods interface {
	Get(uid types.UID) *v1.Pod
	List() []*v1.Pod
}

// statusSource is the agent's status manager (agent/status).
type statusSource interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

// ReportersConfig is what the reporters need of the rest of the agent.
// Every field but MemoryCapacity is required.
type ReportersConfig struct {
	Pods     localPods
	Statuses statusSource
	// Gone reports whether the node holds nothing of a pod any more.
	Gone func(uid types.UID) bool
	// Ready is the Node's Ready condition: nil when the node can run
	// pods.
	Ready func() error
	// SystemInfo describes the machine and the runtime.
	SystemInfo v1.NodeSystemInfo
	// MemoryCapacity is the node's memory in bytes; 0 when unknown.
	MemoryCapacity int64
	// Pressure, if set, says which resources run short (the eviction
	// manager's conditions); else the kubelet's default hard thresholds
	// are read at each status update.
	Pressure func() (memory, disk, pid bool)
	// Allocatable, if set, is the Node's allocatable (node allocatable's);
	// else the machine's less the default eviction thresholds.
	Allocatable v1.ResourceList
	// Features and RuntimeHandlers are what the runtime supports, for
	// the Node's status (nil: left out).
	Features        *v1.NodeFeatures
	RuntimeHandlers []v1.NodeRuntimeHandler
}

// Reporters tell the apiserver what the node runs: the Node and its Lease
// (nodestatus), the pods' status (podstatus) and the mirror pods of its
// static pods (mirror). Built once the runtime answered; Run runs them;
// Notify may be called from any goroutine at any time.
type Reporters struct {
	podStatus  *podstatus.Syncer
	nodeStatus *nodestatus.Manager
	mirrors    *mirror.Manager
}

// NewReporters builds the reporters.
func (c *Cluster) NewReporters(rc ReportersConfig) *Reporters {
	cfg := c.cfg
	nodeStatus := nodestatus.New(nodestatus.Config{
		Client:                c.client,
		NodeName:              cfg.NodeName,
		Labels:                cfg.NodeLabels,
		Taints:                cfg.RegisterWithTaints,
		Addresses:             nodeAddresses(cfg),
		KubeletPort:           cfg.KubeletPort,
		Capacity:              withPods(machine.Capacity(cfg.RootDir, rc.MemoryCapacity), cfg.MaxPods),
		Allocatable:           withPods(allocatableOr(rc.Allocatable, cfg.RootDir), cfg.MaxPods),
		NodeInfo:              rc.SystemInfo,
		DeclaredFeatures:      declaredFeatures(cfg),
		Features:              rc.Features,
		RuntimeHandlers:       rc.RuntimeHandlers,
		Ready:                 rc.Ready,
		Pressure:              pressure(cfg.RootDir, rc.Pressure),
		Events:                c.events,
		Clock:                 cfg.Clock,
		StatusUpdateFrequency: cfg.NodeStatusUpdateFrequency,
		StatusReportFrequency: cfg.NodeStatusReportFrequency,
	})
	return &Reporters{
		podStatus: podstatus.New(podstatus.Config{
			Client:   c.client,
			Statuses: rc.Statuses,
			Pods:     apiPods{pods: rc.Pods, source: c.source},
			Gone:     rc.Gone,
			Clock:    cfg.Clock,
		}),
		nodeStatus: nodeStatus,
		mirrors: mirror.New(mirror.Config{
			Client:   c.client,
			NodeName: cfg.NodeName,
			Static:   func() []*v1.Pod { return staticPods(rc.Pods) },
			Mirrors:  c.source,
			NodeRef:  nodeStatus.NodeRef,
			Clock:    cfg.Clock,
		}),
	}
}

// Notify asks for the status of pod uid to be written to the apiserver;
// the status manager calls it whenever it stores a status. Never blocks.
func (r *Reporters) Notify(uid types.UID) { r.podStatus.Notify(uid) }

// Run registers the Node and keeps it, its Lease, the pods' status and the
// mirror pods current until ctx is done.
func (r *Reporters) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){r.podStatus.Run, r.nodeStatus.Run, r.mirrors.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	wg.Wait()
}

// pressure is the Node's pressure conditions: from the eviction manager's
// when given, else from the default thresholds read at each call.
func pressure(rootDir string, fromEviction func() (memory, disk, pid bool)) func() nodestatus.Pressure {
	if fromEviction == nil {
		return func() nodestatus.Pressure { return nodestatus.Pressure(machine.ReadPressure(rootDir)) }
	}
	return func() nodestatus.Pressure {
		m, d, p := fromEviction()
		return nodestatus.Pressure{Memory: m, Disk: d, PID: p}
	}
}

// allocatableOr is a, or the machine's allocatable when a is nil.
func allocatableOr(a v1.ResourceList, rootDir string) v1.ResourceList {
	if a != nil {
		return a
	}
	return machine.Allocatable(rootDir)
}

func withPods(rl v1.ResourceList, maxPods int) v1.ResourceList {
	rl = rl.DeepCopy()
	rl[v1.ResourcePods] = *resource.NewQuantity(int64(maxPods), resource.DecimalSI)
	return rl
}

// extendWebSocketsToKubelet is the node-declared feature with which the
// apiserver (1.36 and later) proxies exec, attach and port-forward
// WebSockets to the node as they come.
const extendWebSocketsToKubelet = "ExtendWebSocketsToKubelet"

// declaredFeatures is the Node's status.declaredFeatures.
func declaredFeatures(cfg Config) []string {
	if cfg.KubeletPort != 0 && cfg.StreamsWebSockets {
		return []string{extendWebSocketsToKubelet}
	}
	return nil
}
