package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minikubelet/minikubelet/agent/cluster/mirror"
	"github.com/minikubelet/minikubelet/agent/cluster/nodestatus"
	"github.com/minikubelet/minikubelet/agent/cluster/objects"
	"github.com/minikubelet/minikubelet/agent/cluster/podstatus"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/machine"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/sources"
	apisource "github.com/minikubelet/minikubelet/agent/sources/api"
	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/internal/version"
)

// nodeMode holds node mode's parts; the agent has none in standalone mode.
// Built by newNodeMode in New; its Run loops are started by Run.
type nodeMode struct {
	client  kubernetes.Interface
	source  *apisource.Source
	objects *objects.Cache
	// statusSync, nodeStatus and mirrors are set by startNodeMode.
	statusSync *podstatus.Syncer
	nodeStatus *nodestatus.Manager
	mirrors    *mirror.Manager
}

// newNodeMode builds node mode's client, pod source and object source
// from cfg; nil without --kubeconfig.
func newNodeMode(cfg config.Config, nodeName string) (*nodeMode, error) {
	if cfg.Kubeconfig == "" {
		return nil, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	rc.QPS = float32(cfg.KubeAPIQPS)
	rc.Burst = cfg.KubeAPIBurst
	rc.UserAgent = "minikubelet/" + version.Version + " (" + nodeName + ")"
	// No client timeout: it would cut the informers' watches. The node
	// status and lease loops bound each of their calls instead.
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("apiserver client from --kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	src, err := apisource.New(apisource.Config{Client: client, NodeName: nodeName})
	if err != nil {
		return nil, err
	}
	return &nodeMode{
		client:  client,
		source:  src,
		objects: objects.New(objects.Config{Client: client}),
	}, nil
}

// startNodeMode starts node registration, the status syncer and the mirror
// pods once the runtime answered; goRun runs a loop until the agent stops.
func (a *Agent) startNodeMode(goRun func(func(context.Context)), clients *cri.Clients, statuses *statusFanout) {
	n := a.node
	n.statusSync = podstatus.New(podstatus.Config{
		Client:   n.client.CoreV1(),
		Statuses: statuses.manager,
		Pods:     apiPods{pods: a.pods, source: n.source},
		Gone:     a.podGone,
		Clock:    a.clock,
	})
	statuses.notify = n.statusSync.Notify
	n.nodeStatus = nodestatus.New(nodestatus.Config{
		Client:                n.client,
		NodeName:              a.nodeName,
		Labels:                a.cfg.NodeLabels,
		Taints:                a.cfg.RegisterWithTaints,
		Addresses:             []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: a.hostIP}, {Type: v1.NodeHostName, Address: a.nodeName}},
		Capacity:              withPods(machine.Capacity(a.cfg.RootDir, a.memoryCapacity), a.cfg.MaxPods),
		Allocatable:           withPods(machine.Allocatable(a.cfg.RootDir), a.cfg.MaxPods),
		NodeInfo:              machine.SystemInfo(clients.RuntimeName, clients.RuntimeVersion),
		Ready:                 a.nodeReady,
		Pressure:              func() nodestatus.Pressure { return nodestatus.Pressure(machine.ReadPressure(a.cfg.RootDir)) },
		Clock:                 a.clock,
		StatusUpdateFrequency: a.cfg.NodeStatusUpdateFrequency,
		StatusReportFrequency: a.cfg.NodeStatusReportFrequency,
	})
	n.mirrors = mirror.New(mirror.Config{
		Client:   n.client.CoreV1(),
		NodeName: a.nodeName,
		Static:   a.staticPods,
		Mirrors:  n.source,
		NodeRef:  n.nodeStatus.NodeRef,
		Clock:    a.clock,
	})
	goRun(n.statusSync.Run)
	goRun(n.nodeStatus.Run)
	goRun(n.mirrors.Run)
}

// statusFanout passes each pod status the status manager stores on to the
// prober and, in node mode, to the apiserver status syncer.
type statusFanout struct {
	manager interface {
		Get(uid types.UID) (v1.PodStatus, bool)
	}
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

// staticPods returns the pods of the file and HTTP sources that are not
// being terminated: those that have mirror pods.
func (a *Agent) staticPods() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range a.pods.List() {
		if p.Annotations[manifest.AnnotationConfigSource] == sources.API || p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// apiPods finds the API object of each of the node's pods for the status
// syncer: API pods by UID, static pods' mirrors by name.
type apiPods struct {
	pods   *podmanager.Manager
	source *apisource.Source
}

func (p apiPods) APIPod(uid types.UID) (*v1.Pod, bool, bool) {
	if pod, ok := p.source.PodByUID(uid); ok {
		return pod, false, true
	}
	local := p.pods.Get(uid)
	if local == nil || local.Annotations[manifest.AnnotationConfigSource] == sources.API {
		return nil, false, false
	}
	mp, ok := p.source.PodByName(local.Namespace, local.Name)
	if !ok || mp.Annotations[manifest.AnnotationMirror] == "" {
		return nil, false, false
	}
	return mp, true, true
}

func (p apiPods) UIDs() []types.UID {
	var out []types.UID
	for _, pod := range p.pods.List() {
		out = append(out, pod.UID)
	}
	return out
}

func (p apiPods) Deleted() []types.UID {
	var out []types.UID
	for _, pod := range p.source.Pods() {
		if pod.DeletionTimestamp != nil && pod.Annotations[manifest.AnnotationMirror] == "" {
			out = append(out, pod.UID)
		}
	}
	return out
}

func withPods(rl v1.ResourceList, maxPods int) v1.ResourceList {
	rl = rl.DeepCopy()
	rl[v1.ResourcePods] = *resource.NewQuantity(int64(maxPods), resource.DecimalSI)
	return rl
}
