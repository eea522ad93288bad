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
		Allocatable:           withPods(machine.Allocatable(cfg.RootDir), cfg.MaxPods),
		NodeInfo:              rc.SystemInfo,
		Ready:                 rc.Ready,
		Pressure:              func() nodestatus.Pressure { return nodestatus.Pressure(machine.ReadPressure(cfg.RootDir)) },
		Clock:                 cfg.Clock,
		StatusUpdateFrequency: cfg.NodeStatusUpdateFrequency,
		StatusReportFrequency: cfg.NodeStatusReportFrequency,
	})
	return &Reporters{
		podStatus: podstatus.New(podstatus.Config{
			Client:   c.client.CoreV1(),
			Statuses: rc.Statuses,
			Pods:     apiPods{pods: rc.Pods, source: c.source},
			Gone:     rc.Gone,
			Clock:    cfg.Clock,
		}),
		nodeStatus: nodeStatus,
		mirrors: mirror.New(mirror.Config{
			Client:   c.client.CoreV1(),
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

func withPods(rl v1.ResourceList, maxPods int) v1.ResourceList {
	rl = rl.DeepCopy()
	rl[v1.ResourcePods] = *resource.NewQuantity(int64(maxPods), resource.DecimalSI)
	return rl
}
