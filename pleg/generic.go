package pleg

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// DefaultChannelCapacity is the capacity of the event channel. A relist that
// finds the channel full drops the event and counts it (Dropped); the pod's
// cache entry is refreshed all the same, so the next periodic sync of the pod
// sees the change.
const DefaultChannelCapacity = 1000

// Modes a PLEG reports (Mode).
const (
	ModeRelist  = "relist"
	ModeEvented = "evented"
)

// MaxRelistAge is how old the last successful relist may be before Healthy
// reports the PLEG unhealthy.
const MaxRelistAge = 3 * time.Minute

// GenericConfig configures a Generic PLEG.
type GenericConfig struct {
	// Runtime is read with one ListPodSandbox and one ListContainers per
	// relist, plus status calls for the pods that changed.
	Runtime kubecontainer.Lister
	// Cache receives the status of every pod that changed.
	Cache *Cache
	// RelistPeriod is the pause between the end of one relist and the start
	// of the next.
	RelistPeriod time.Duration
	// ChannelCapacity of the event channel; DefaultChannelCapacity when 0.
	ChannelCapacity int
	Clock           clock.WithTicker
	// ObserveRelist, if set, is told how long each successful relist took
	// (kubelet_pleg_relist_duration_seconds).
	ObserveRelist func(time.Duration)
}

// Generic is the relisting PLEG.
type Generic struct {
	cfg GenericConfig
	// events is written only by Run's relists (never blocking) and never
	// closed; the agent's syncLoop reads it.
	events chan *Event
	// records is the last relist's view; owned by Run's goroutine.
	records map[types.UID]podRecord
	// reinspect holds pods whose status could not be read; they are read
	// again on the next relist. Owned by Run's goroutine.
	reinspect map[types.UID]bool
	// lastRelist is the UnixNano time of the last successful relist.
	lastRelist atomic.Int64
	dropped    atomic.Uint64
}

// podRecord maps each sandbox and container ID of a pod to its state.
type podRecord map[string]state

type state int

const (
	stateNonExistent state = iota
	stateRunning
	stateExited
	stateUnknown
)

// NewGeneric returns a relisting PLEG; Run starts it.
func NewGeneric(cfg GenericConfig) *Generic {
	if cfg.ChannelCapacity <= 0 {
		cfg.ChannelCapacity = DefaultChannelCapacity
	}
	return &Generic{
		cfg:       cfg,
		events:    make(chan *Event, cfg.ChannelCapacity),
		records:   make(map[types.UID]podRecord),
		reinspect: make(map[types.UID]bool),
	}
}

// Watch returns the event channel. It is never closed.
func (g *Generic) Watch() <-chan *Event { return g.events }

// Dropped returns how many events were dropped because the channel was full.
func (g *Generic) Dropped() uint64 { return g.dropped.Load() }

// Run relists until ctx is done. A failed relist is logged and retried at
// the next period.
func (g *Generic) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("pleg")
	ctx = klog.NewContext(ctx, logger)
	for {
		if err := g.Relist(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Relist failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-g.cfg.Clock.After(g.cfg.RelistPeriod):
		}
	}
}

// Healthy returns an error naming the cause when the PLEG is not keeping
// up: no successful relist for MaxRelistAge, or an event channel so full
// that events are being dropped.
func (g *Generic) Healthy() error {
	return g.healthy(MaxRelistAge)
}

func (g *Generic) healthy(maxAge time.Duration) error {
	last := g.lastRelist.Load()
	if last == 0 {
		return fmt.Errorf("pleg has not relisted yet")
	}
	if age := g.cfg.Clock.Since(time.Unix(0, last)); age > maxAge {
		return fmt.Errorf("pleg was last seen active %v ago; threshold is %v", age.Round(time.Second), maxAge)
	}
	if n := len(g.events); n == cap(g.events) {
		return fmt.Errorf("pleg event channel is saturated (%d events waiting; %d dropped in all)", n, g.dropped.Load())
	}
	return nil
}

// Mode is "relist".
func (g *Generic) Mode() string { return ModeRelist }

// LastSeen is when the PLEG last relisted successfully (zero before).
func (g *Generic) LastSeen() time.Time {
	if last := g.lastRelist.Load(); last != 0 {
		return time.Unix(0, last)
	}
	return time.Time{}
}

// Relist lists the runtime once, refreshes the cache of every pod that
// changed since the previous relist and emits their events. It is called by
// Run; tests call it directly. Not safe for concurrent use.
func (g *Generic) Relist(ctx context.Context) error {
	ts := g.cfg.Clock.Now()
	sandboxes, err := g.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	containers, err := g.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	current, objects := group(sandboxes, containers)

	logger := klog.FromContext(ctx)
	uids := union(g.records, current)
	for uid := range g.reinspect {
		uids[uid] = struct{}{}
	}
	for uid := range uids {
		events := diff(uid, g.records[uid], current[uid])
		if len(events) == 0 && !g.reinspect[uid] {
			continue
		}
		// Only what changed since the cached status costs a status call.
		prev, _ := g.cfg.Cache.Get(uid)
		objs := objects[uid]
		if objs == nil {
			objs = &podObjects{} // the pod is gone from the runtime
		}
		status, err := kubecontainer.InspectPod(ctx, g.cfg.Runtime, kubecontainer.Listed{UID: uid, Sandboxes: objs.sandboxes, Containers: objs.containers, At: ts}, prev)
		if err != nil {
			logger.V(2).Info("Reading pod status failed; will retry at next relist", "podUID", uid, "err", err)
			g.reinspect[uid] = true
			g.cfg.Cache.Set(uid, status, err, ts)
			// Keep the old record so that the next relist finds the same
			// changes and sends their events then.
			if old, ok := g.records[uid]; ok {
				current[uid] = old
			} else {
				delete(current, uid)
			}
			continue
		}
		delete(g.reinspect, uid)
		g.cfg.Cache.Set(uid, status, nil, ts)
		for _, e := range events {
			e.Time = ts
			g.Emit(e)
		}
	}
	g.records = current
	g.cfg.Cache.UpdateTime(ts)
	g.lastRelist.Store(ts.UnixNano())
	if g.cfg.ObserveRelist != nil {
		g.cfg.ObserveRelist(g.cfg.Clock.Since(ts))
	}
	return nil
}

// Emit sends e on the event channel without blocking; when the channel is
// full, e is dropped and counted (Dropped). Relist emits through it, and
// so does a PLEG that shares the channel (Evented). Safe for concurrent
// use.
func (g *Generic) Emit(e *Event) {
	select {
	case g.events <- e:
	default:
		g.dropped.Add(1)
	}
}

// podObjects are the sandboxes and containers a relist listed for one pod.
type podObjects struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

// group indexes the runtime's objects that carry a pod UID label: their
// states for the diff, and the objects themselves for InspectPod.
func group(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) (map[types.UID]podRecord, map[types.UID]*podObjects) {
	out := make(map[types.UID]podRecord)
	objects := make(map[types.UID]*podObjects)
	obj := func(uid types.UID) *podObjects {
		o, ok := objects[uid]
		if !ok {
			o = &podObjects{}
			objects[uid] = o
		}
		return o
	}
	rec := func(uid types.UID) podRecord {
		r, ok := out[uid]
		if !ok {
			r = podRecord{}
			out[uid] = r
		}
		return r
	}
	for _, sb := range sandboxes {
		if uid := kubecontainer.PodUIDFromLabels(sb.Labels); uid != "" {
			rec(uid)[sb.Id] = sandboxState(sb.State)
			obj(uid).sandboxes = append(obj(uid).sandboxes, sb)
		}
	}
	for _, c := range containers {
		if uid := kubecontainer.PodUIDFromLabels(c.Labels); uid != "" {
			rec(uid)[c.Id] = containerState(c.State)
			obj(uid).containers = append(obj(uid).containers, c)
		}
	}
	return out, objects
}

func union(a, b map[types.UID]podRecord) map[types.UID]struct{} {
	out := make(map[types.UID]struct{}, len(a)+len(b))
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

// diff returns the events that turn old into cur.
func diff(uid types.UID, old, cur podRecord) []*Event {
	var events []*Event
	ids := make(map[string]struct{}, len(old)+len(cur))
	for id := range old {
		ids[id] = struct{}{}
	}
	for id := range cur {
		ids[id] = struct{}{}
	}
	for id := range ids {
		// A missing ID reads as stateNonExistent, the zero state.
		before, after := old[id], cur[id]
		if before == after {
			continue
		}
		switch after {
		case stateRunning:
			events = append(events, &Event{ID: uid, Type: ContainerStarted, Data: id})
		case stateExited:
			events = append(events, &Event{ID: uid, Type: ContainerDied, Data: id})
		case stateUnknown:
			events = append(events, &Event{ID: uid, Type: ContainerChanged, Data: id})
		case stateNonExistent:
			if before == stateRunning {
				events = append(events, &Event{ID: uid, Type: ContainerDied, Data: id})
			}
			events = append(events, &Event{ID: uid, Type: ContainerRemoved, Data: id})
		}
	}
	return events
}

func sandboxState(s runtimeapi.PodSandboxState) state {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return stateRunning
	}
	return stateExited
}

func containerState(s runtimeapi.ContainerState) state {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return stateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return stateExited
	default:
		return stateUnknown
	}
}
