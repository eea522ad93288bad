package nodestatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// LeaseNamespace holds the nodes' leases.
const LeaseNamespace = "kube-node-lease"

// Pressure says which resources of the node run short, as the kubelet's
// eviction manager judges them.
type Pressure struct {
	Memory, Disk, PID bool
}

// Config configures a Manager. Durations of zero get the kubelet's
// defaults.
type Config struct {
	// Client talks to the apiserver. Required.
	Client kubeclient.Interface
	// NodeName names the Node and its Lease. Required.
	NodeName string
	// Labels and Taints are given to the Node when it is registered
	// (--node-labels, --register-with-taints); Labels are also added to a
	// Node that exists already.
	Labels map[string]string
	Taints []v1.Taint
	// Addresses, Capacity, Allocatable and NodeInfo go into the status.
	Addresses []v1.NodeAddress
	// KubeletPort is the kubelet port, status.daemonEndpoints'; 0 when it
	// is not served.
	KubeletPort int
	Capacity    v1.ResourceList
	Allocatable v1.ResourceList
	NodeInfo    v1.NodeSystemInfo
	// DeclaredFeatures go into status.declaredFeatures: what the node
	// serves that the control plane may use (NodeDeclaredFeatures), such
	// as ExtendWebSocketsToKubelet.
	DeclaredFeatures []string
	// Features and RuntimeHandlers go into status.features and
	// status.runtimeHandlers: what the runtime says it supports, as the
	// kubelet reports it (nil: left out).
	Features        *v1.NodeFeatures
	RuntimeHandlers []v1.NodeRuntimeHandler
	// Ready says whether the node can run pods; its error is the Ready
	// condition's message otherwise. Nil means always ready.
	Ready func() error
	// Pressure reads the node's resource pressure. Nil means none.
	Pressure func() Pressure
	// Events records the kubelet's node events: Starting, and each
	// condition's change (NodeReady, NodeNotReady,
	// NodeHasSufficientMemory, ...); nil records none.
	Events eventRecorder
	Clock  clock.WithTicker
	// StatusUpdateFrequency (10s) is how often the status is computed;
	// StatusReportFrequency (5m) how often it is patched when nothing
	// changed.
	StatusUpdateFrequency time.Duration
	StatusReportFrequency time.Duration
	// LeaseDuration (40s) and LeaseRenewInterval (10s) shape the Lease.
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
}

// Manager registers and updates the Node. Create it with New; Run once.
type Manager struct {
	cfg Config

	mu sync.Mutex
	// node is the Node as last read or written; nil until registered.
	// Guarded by mu.
	node *v1.Node
	// lastReport is when the status was last patched; guarded by mu.
	lastReport time.Time
	// evented is each condition's status as last told in an event; only
	// Run's goroutine touches it.
	evented map[v1.NodeConditionType]v1.ConditionStatus
	// informer watches the Node (field selector metadata.name), so that
	// each status update compares against the Node as the apiserver has
	// it without a GET every StatusUpdateFrequency: the kubelet reads it
	// from its Node informer too. Run runs it.
	informer cache.SharedIndexInformer
	// reread asks the next status update to GET the Node instead of
	// reading the informer's copy: the last update failed, and the copy
	// may be what it failed on (the kubelet's retries read from the
	// apiserver too). Only the status goroutine touches it.
	reread bool
	// lease is the Lease as last created or renewed, which the next
	// renewal updates without reading it first, as the kubelet's lease
	// controller does; nil to read it (at start, and after a renewal
	// failed). Only the lease goroutine touches it.
	lease *coordinationv1.Lease
}

// eventRecorder records the kubelet's events (agent/cluster/events).
type eventRecorder interface {
	Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any)
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Events == nil {
		cfg.Events = events.Discard{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.StatusUpdateFrequency, 10*time.Second)
	def(&cfg.StatusReportFrequency, 5*time.Minute)
	def(&cfg.LeaseDuration, 40*time.Second)
	def(&cfg.LeaseRenewInterval, 10*time.Second)
	informer := kubeclient.Informer(cfg.Client, cfg.Client.Nodes(), &v1.Node{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector(metav1.ObjectNameField, cfg.NodeName).String()
	}, 0, nil)
	return &Manager{cfg: cfg, evented: map[v1.NodeConditionType]v1.ConditionStatus{}, informer: informer}
}

// Node returns the Node as last seen, nil before it is registered. The
// caller must not modify it.
func (m *Manager) Node() *v1.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node
}

// Run registers the Node, then renews its Lease and updates its status
// until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("nodestatus").WithValues("node", m.cfg.NodeName)
	ctx = klog.NewContext(ctx, logger)
	delay := 200 * time.Millisecond
	for {
		err := m.register(ctx)
		if err == nil {
			break
		}
		logger.Error(err, "Registering the node failed; will retry", "retryIn", delay)
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.Clock.After(delay):
		}
		delay = min(2*delay, 7*time.Second)
	}
	logger.Info("Node registered")
	m.event(v1.EventTypeNormal, events.Starting, "Starting minikubelet.")
	if err := m.updateStatus(ctx); err != nil {
		logger.Error(err, "Updating the node's status failed; will retry")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, run := range []func(context.Context){m.runLease, m.informer.RunWithContext} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	ticker := m.cfg.Clock.NewTicker(m.cfg.StatusUpdateFrequency)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if err := m.bounded(ctx, m.cfg.StatusUpdateFrequency, m.updateStatus); err != nil {
				logger.Error(err, "Updating the node's status failed; will retry")
			}
		}
	}
}

// bounded runs f with a context that ends after d: a call to an apiserver
// that does not answer must not hold up the next renewal.
func (m *Manager) bounded(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

// register creates the Node, or adopts the one that exists, adding the
// configured labels to it.
func (m *Manager) register(ctx context.Context) error {
	nodes := m.cfg.Client.Nodes()
	want := m.initialNode()
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		m.setNode(created)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", m.cfg.NodeName, err)
	}
	existing, err := nodes.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get existing node %s: %w", m.cfg.NodeName, err)
	}
	missing := map[string]string{}
	for k, v := range want.Labels {
		if existing.Labels[k] != v {
			missing[k] = v
		}
	}
	if len(missing) > 0 {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": missing}})
		if err != nil {
			return fmt.Errorf("labels patch: %w", err)
		}
		existing, err = nodes.Patch(ctx, m.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("label existing node %s: %w", m.cfg.NodeName, err)
		}
	}
	m.setNode(existing)
	return nil
}

func (m *Manager) setNode(n *v1.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.node = n
}

// initialNode is the Node the agent registers.
func (m *Manager) initialNode() *v1.Node {
	labels := map[string]string{
		v1.LabelHostname:   m.cfg.NodeName,
		v1.LabelOSStable:   m.cfg.NodeInfo.OperatingSystem,
		v1.LabelArchStable: m.cfg.NodeInfo.Architecture,
	}
	for k, v := range m.cfg.Labels {
		labels[k] = v
	}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        m.cfg.NodeName,
			Labels:      labels,
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec: v1.NodeSpec{Taints: m.cfg.Taints},
	}
	m.fillStatus(n, m.cfg.Clock.Now())
	return n
}

// fillStatus sets n's status to what the node is now, keeping each
// condition's transition time while its status does not change.
func (m *Manager) fillStatus(n *v1.Node, now time.Time) {
	n.Status.Capacity = m.cfg.Capacity.DeepCopy()
	n.Status.Allocatable = m.cfg.Allocatable.DeepCopy()
	n.Status.Addresses = append([]v1.NodeAddress(nil), m.cfg.Addresses...)
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(m.cfg.KubeletPort)
	n.Status.NodeInfo = mergeNodeInfo(n.Status.NodeInfo, m.cfg.NodeInfo)
	n.Status.DeclaredFeatures = slices.Clone(m.cfg.DeclaredFeatures)
	n.Status.Features = m.cfg.Features.DeepCopy()
	n.Status.RuntimeHandlers = slices.Clone(m.cfg.RuntimeHandlers)
	n.Status.Conditions = Conditions(n.Status.Conditions, m.readiness(), m.pressure(), now)
}

// mergeNodeInfo keeps what the agent does not know (systemUUID set by
// others, say) and sets what it does.
func mergeNodeInfo(old, cur v1.NodeSystemInfo) v1.NodeSystemInfo {
	out := cur
	if out.SystemUUID == "" {
		out.SystemUUID = old.SystemUUID
	}
	return out
}

func (m *Manager) readiness() error {
	if m.cfg.Ready == nil {
		return nil
	}
	return m.cfg.Ready()
}

func (m *Manager) pressure() Pressure {
	if m.cfg.Pressure == nil {
		return Pressure{}
	}
	return m.cfg.Pressure()
}

// Conditions returns the node's four conditions for ready and p at now,
// keeping the transition times of old conditions whose status holds, and
// any other condition of old as it is.
func Conditions(old []v1.NodeCondition, ready error, p Pressure, now time.Time) []v1.NodeCondition {
	ts := metav1.NewTime(now)
	type cond struct {
		t                   v1.NodeConditionType
		bad                 bool
		okReason, badReason string
		okMsg, badMsg       string
	}
	readyMsg := ""
	if ready != nil {
		readyMsg = ready.Error()
	}
	conds := []cond{
		{v1.NodeMemoryPressure, p.Memory, "KubeletHasSufficientMemory", "KubeletHasInsufficientMemory", "kubelet has sufficient memory available", "kubelet has insufficient memory available"},
		{v1.NodeDiskPressure, p.Disk, "KubeletHasNoDiskPressure", "KubeletHasDiskPressure", "kubelet has no disk pressure", "kubelet has disk pressure"},
		{v1.NodePIDPressure, p.PID, "KubeletHasSufficientPID", "KubeletHasInsufficientPID", "kubelet has sufficient PID available", "kubelet has insufficient PID available"},
		{v1.NodeReady, ready != nil, "KubeletReady", "KubeletNotReady", "kubelet is posting ready status", readyMsg},
	}
	out := make([]v1.NodeCondition, 0, len(conds)+len(old))
	for _, c := range conds {
		nc := v1.NodeCondition{Type: c.t, LastHeartbeatTime: ts, LastTransitionTime: ts}
		switch {
		case c.t == v1.NodeReady && !c.bad, c.t != v1.NodeReady && c.bad:
			nc.Status = v1.ConditionTrue
		default:
			nc.Status = v1.ConditionFalse
		}
		if c.bad {
			nc.Reason, nc.Message = c.badReason, c.badMsg
		} else {
			nc.Reason, nc.Message = c.okReason, c.okMsg
		}
		for _, o := range old {
			if o.Type == c.t && o.Status == nc.Status {
				nc.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, nc)
	}
	for _, o := range old {
		switch o.Type {
		case v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure:
		default:
			out = append(out, o)
		}
	}
	return out
}

// updateStatus computes the Node's status and patches it when it changed
// (heartbeats aside) or is due for a report.
func (m *Manager) updateStatus(ctx context.Context) error {
	err := m.tryUpdateStatus(ctx)
	m.reread = err != nil
	return err
}

// currentNode is the Node as the informer has it, or as the apiserver
// answers a GET when the informer has not synced, does not hold it, or
// the last update failed.
func (m *Manager) currentNode(ctx context.Context) (*v1.Node, error) {
	if !m.reread && m.informer.HasSynced() {
		obj, ok, err := m.informer.GetStore().GetByKey(m.cfg.NodeName)
		if n, isNode := obj.(*v1.Node); err == nil && ok && isNode {
			return n, nil
		}
	}
	n, err := m.cfg.Client.Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", m.cfg.NodeName, err)
	}
	return n, nil
}

func (m *Manager) tryUpdateStatus(ctx context.Context) error {
	nodes := m.cfg.Client.Nodes()
	old, err := m.currentNode(ctx)
	if err != nil {
		return err
	}
	now := m.cfg.Clock.Now()
	cur := old.DeepCopy()
	m.fillStatus(cur, now)
	m.mu.Lock()
	due := now.Sub(m.lastReport) >= m.cfg.StatusReportFrequency
	m.mu.Unlock()
	if !due && !statusChanged(old.Status, cur.Status) {
		m.setNode(old)
		m.conditionEvents(old.Status.Conditions)
		return nil
	}
	patch, err := statusPatch(old, cur)
	if err != nil {
		return err
	}
	patched, err := nodes.Patch(ctx, m.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch status of node %s: %w", m.cfg.NodeName, err)
	}
	m.mu.Lock()
	m.lastReport = now
	m.node = patched
	m.mu.Unlock()
	m.conditionEvents(patched.Status.Conditions)
	klog.FromContext(ctx).V(2).Info("Node status patched", "ready", readyStatus(patched), "due", due)
	klog.FromContext(ctx).V(4).Info("Node status patch", "patch", string(patch))
	return nil
}

// conditionEventReasons are the kubelet's event reasons of condition t
// with status True and False; ok is false for a condition the agent does
// not set.
func conditionEventReasons(t v1.NodeConditionType) (ifTrue, ifFalse string, ok bool) {
	switch t {
	case v1.NodeReady:
		return events.NodeReady, events.NodeNotReady, true
	case v1.NodeMemoryPressure:
		return "NodeHasInsufficientMemory", "NodeHasSufficientMemory", true
	case v1.NodeDiskPressure:
		return "NodeHasDiskPressure", "NodeHasNoDiskPressure", true
	case v1.NodePIDPressure:
		return "NodeHasInsufficientPID", "NodeHasSufficientPID", true
	}
	return "", "", false
}

// conditionEvents records, for each condition the agent sets whose status
// changed since the last event (or was never told), the kubelet's event:
// "Node <name> status is now: NodeReady", and so on.
func (m *Manager) conditionEvents(conds []v1.NodeCondition) {
	for _, c := range conds {
		ifTrue, ifFalse, ok := conditionEventReasons(c.Type)
		if !ok || m.evented[c.Type] == c.Status || c.Status == v1.ConditionUnknown {
			continue
		}
		m.evented[c.Type] = c.Status
		reason := ifFalse
		if c.Status == v1.ConditionTrue {
			reason = ifTrue
		}
		m.event(v1.EventTypeNormal, reason, "Node %s status is now: %s", m.cfg.NodeName, reason)
	}
}

// event records an event about the node.
func (m *Manager) event(eventType, reason, messageFmt string, args ...any) {
	m.cfg.Events.Eventf(events.Node(m.cfg.NodeName), eventType, reason, messageFmt, args...)
}

func readyStatus(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}

// statusChanged reports whether b differs from a in anything but the
// conditions' heartbeat times.
func statusChanged(a, b v1.NodeStatus) bool {
	strip := func(s v1.NodeStatus) v1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return !equality.Semantic.DeepEqual(strip(a), strip(b))
}

// statusPatch is the strategic merge patch from old's status to cur's.
func statusPatch(old, cur *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Node{Status: old.Status})
	if err != nil {
		return nil, fmt.Errorf("encode node status: %w", err)
	}
	curJSON, err := json.Marshal(v1.Node{Status: cur.Status})
	if err != nil {
		return nil, fmt.Errorf("encode node status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, curJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	return patch, nil
}

// runLease renews the Lease every LeaseRenewInterval; after a failure it
// tries again sooner, backing off from 200ms to the renew interval.
func (m *Manager) runLease(ctx context.Context) {
	logger := klog.FromContext(ctx)
	retry := 200 * time.Millisecond
	for {
		wait := m.cfg.LeaseRenewInterval
		if err := m.bounded(ctx, m.cfg.LeaseRenewInterval, m.renewLease); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Renewing the node lease failed; will retry", "retryIn", retry)
			wait = retry
			retry = min(2*retry, m.cfg.LeaseRenewInterval)
		} else {
			retry = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.Clock.After(wait):
		}
	}
}

// renewLease creates or renews the node's Lease. It renews the Lease as
// it last wrote it, without reading it first; when that fails (someone
// else wrote it: a conflict), it reads the Lease and renews that.
func (m *Manager) renewLease(ctx context.Context) error {
	leases := m.cfg.Client.Leases(LeaseNamespace)
	now := metav1.NewMicroTime(m.cfg.Clock.Now())
	if m.lease != nil {
		l := m.lease.DeepCopy()
		m.fillLease(l, now)
		renewed, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			m.lease = renewed
			return nil
		}
		m.lease = nil
		if ctx.Err() != nil {
			return fmt.Errorf("renew lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
		}
		klog.FromContext(ctx).V(2).Info("Renewing the lease as last written failed; reading it again", "err", err)
	}
	l, err := leases.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Namespace: LeaseNamespace},
		}
		m.fillLease(l, now)
		created, err := leases.Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
		}
		m.lease = created
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
	}
	l = l.DeepCopy()
	m.fillLease(l, now)
	renewed, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
	}
	m.lease = renewed
	return nil
}

func (m *Manager) fillLease(l *coordinationv1.Lease, now metav1.MicroTime) {
	l.Spec.HolderIdentity = ptr.To(m.cfg.NodeName)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(m.cfg.LeaseDuration / time.Second))
	l.Spec.RenewTime = &now
	if n := m.Node(); n != nil && len(l.OwnerReferences) == 0 {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
	}
}

// ErrNotRegistered is returned by NodeRef before the node is registered.
var ErrNotRegistered = errors.New("node not registered yet")

// NodeRef returns an owner reference to the Node, for mirror pods.
func (m *Manager) NodeRef() (metav1.OwnerReference, error) {
	n := m.Node()
	if n == nil {
		return metav1.OwnerReference{}, ErrNotRegistered
	}
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}, nil
}
