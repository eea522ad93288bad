package pleg

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/crilog"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// MaxEventedAge is how long Evented may go without a successful relist or a
// handled container event, while its event stream is up, before Healthy
// reports it unhealthy. While relisting instead, MaxRelistAge applies.
const MaxEventedAge = 10 * time.Minute

// DefaultSafetyRelistPeriod is how often Evented relists while its event
// stream is up, when EventedConfig.SafetyRelistPeriod is 0.
const DefaultSafetyRelistPeriod = time.Minute

const (
	// defaultRelistPeriod applies when EventedConfig sets none.
	defaultRelistPeriod = time.Second
	// reconnectInitialDelay is the wait before the first reconnect; it
	// doubles with each further failure up to reconnectMaxDelay.
	reconnectInitialDelay = 250 * time.Millisecond
	reconnectMaxDelay     = 30 * time.Second
	// maxStreamFailures consecutive failures make Evented fall back to
	// relisting, trying the stream again every fallbackRetryPeriod.
	maxStreamFailures   = 5
	fallbackRetryPeriod = time.Minute
	// eventStreamBuffer is the capacity of each stream's channel.
	eventStreamBuffer = DefaultChannelCapacity
	// secondsBelow: a CreatedAt below it is in seconds, not nanoseconds. As
	// nanoseconds 1e12 is 1970-01-01T00:16:40Z; as seconds, the year 33658.
	secondsBelow = 1e12
)

// eventedRuntime is what Evented needs of the CRI runtime service.
//
// GetContainerEvents behaves as k8s.io/cri-client's: it opens one stream of
// container events and blocks; once the runtime accepted the subscription it
// calls connectionEstablishedCallback (on its own goroutine), then sends every
// event it receives on ch, blocking while ch is full. It returns an error when
// the stream ends, including when ctx is cancelled. A runtime that does not
// serve container events fails with gRPC Unimplemented, either at once or
// (as cri-client does) after the callback. The Lister methods are used to
// read a pod's status when an event does not carry it; they must be safe for
// use concurrently with GetContainerEvents.
type eventedRuntime interface {
	kubecontainer.Lister
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

var _ eventedRuntime = internalapi.RuntimeService(nil)

// relister is the relisting PLEG that Evented drives for its safety relist
// and its fallback, and whose event channel and drop counter it shares.
// Generic is one. Evented calls Relist from one goroutine at a time and
// Emit from that same goroutine; Watch, Dropped and Healthy may be called
// concurrently with both.
type relister interface {
	// Relist lists the runtime once, stores in the cache the status of
	// every pod that changed and emits their events.
	Relist(ctx context.Context) error
	// Emit sends an event on the shared channel without blocking,
	// dropping and counting it when the channel is full.
	Emit(e *Event)
	// Watch is the shared event channel; Dropped counts the events it
	// dropped.
	Watch() <-chan *Event
	Dropped() uint64
	// Healthy is the relisting PLEG's own health check.
	Healthy() error
}

var _ relister = (*Generic)(nil)

// EventedConfig configures Evented.
type EventedConfig struct {
	// Runtime is subscribed to with GetContainerEvents; its Lister methods
	// read a pod's status when an event does not carry it.
	Runtime eventedRuntime
	// Cache receives the status each event carries; required. It must be
	// the cache the Relister writes.
	Cache *Cache
	// Relister is the relisting PLEG (a Generic) that Evented drives for
	// its safety-net relist and fallback; Evented shares its event channel
	// (Watch) and drop counter. Only Evented may call its Relist: do not
	// also Run it. When nil, Evented makes a Generic from Runtime, Cache,
	// RelistPeriod and Clock.
	Relister relister
	// SafetyRelistPeriod: relist this often while the stream works
	// (DefaultSafetyRelistPeriod when 0).
	SafetyRelistPeriod time.Duration
	// RelistPeriod: relist this often while the stream is not up (runtime
	// without events, reconnecting, fallen back); 1s when 0.
	RelistPeriod time.Duration
	// Clock is the real clock when nil; it should be the Relister's.
	Clock clock.WithTicker
	// OnConnectionError is called for every failed or broken stream
	// (kubelet_evented_pleg_connection_error_count), on Run's goroutine;
	// may be nil. A runtime that does not serve events is no connection
	// error and is not counted.
	OnConnectionError func()
}

// Evented is the PLEG that follows the runtime's container event stream
// (CRI GetContainerEvents) and relists only as a safety net.
//
// Each event carries the statuses of its pod's sandbox and of that sandbox's
// containers; Evented merges them into the cached PodStatus under the event's
// own timestamp, so Cache.Set refuses an event older than what a pod worker
// or a relist already stored (DESIGN.md rule 3), and then emits one Event.
// All relists and all event handling run on Run's goroutine, one at a time.
//
// States (Mode is "evented" in evented, "relist" in the others):
//
//	               stream up: relist at once
//	connecting  ----------------------------->  evented: relist every
//	(relist)    <-----------------------------  SafetyRelistPeriod
//	 ^   |   |     stream broke: a connection error
//	 |   |   |
//	 |   |   +-- Unimplemented -->  unsupported: relist, for good
//	 |   |
//	 +---+  failed: a connection error; try again after 250ms, 500ms, 1s,
//	        2s, ...; from the 5th failure in a row (fallen back) every minute
//
// While the stream is not up, Evented relists every RelistPeriod.
type Evented struct {
	cfg EventedConfig
	// streaming is true while the event stream is up (Mode "evented").
	streaming atomic.Bool
	// lastActive is the UnixNano time of the last successful relist or
	// handled event; 0 before either.
	lastActive atomic.Int64
	// streamBuffer is the capacity of each stream's channel
	// (eventStreamBuffer); tests lower it.
	streamBuffer int
}

// NewEvented returns an evented PLEG; Run starts it.
func NewEvented(cfg EventedConfig) *Evented {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RelistPeriod <= 0 {
		cfg.RelistPeriod = defaultRelistPeriod
	}
	if cfg.SafetyRelistPeriod <= 0 {
		cfg.SafetyRelistPeriod = DefaultSafetyRelistPeriod
	}
	if cfg.Relister == nil {
		cfg.Relister = NewGeneric(GenericConfig{
			Runtime:      cfg.Runtime,
			Cache:        cfg.Cache,
			RelistPeriod: cfg.RelistPeriod,
			Clock:        cfg.Clock,
		})
	}
	return &Evented{cfg: cfg, streamBuffer: eventStreamBuffer}
}

// Watch returns the event channel: the Relister's. It is never closed.
func (e *Evented) Watch() <-chan *Event { return e.cfg.Relister.Watch() }

// Dropped returns how many events were dropped because the channel was full.
func (e *Evented) Dropped() uint64 { return e.cfg.Relister.Dropped() }

// Mode is ModeEvented while the event stream is up, ModeRelist otherwise
// (the runtime serves no events, the stream is reconnecting, or Evented fell
// back to relisting). Safe for concurrent use.
func (e *Evented) Mode() string {
	if e.streaming.Load() {
		return ModeEvented
	}
	return ModeRelist
}

// LastSeen is when Evented last relisted successfully or handled an event
// (zero before either). Safe for concurrent use.
func (e *Evented) LastSeen() time.Time {
	if last := e.lastActive.Load(); last != 0 {
		return time.Unix(0, last)
	}
	return time.Time{}
}

// Healthy returns an error naming the cause when the PLEG is not keeping up:
// the event channel is full (events are being dropped); or, while the stream
// is up, neither a relist succeeded nor an event was handled for
// MaxEventedAge; or, while relisting instead, the Relister's rule
// (MaxRelistAge). Safe for concurrent use.
func (e *Evented) Healthy() error {
	ch := e.Watch()
	if n := len(ch); n > 0 && n == cap(ch) {
		return fmt.Errorf("pleg event channel is saturated (%d events waiting; %d dropped in all)", n, e.Dropped())
	}
	if !e.streaming.Load() {
		return e.cfg.Relister.Healthy()
	}
	last := e.lastActive.Load()
	if last == 0 {
		return fmt.Errorf("evented pleg has neither relisted nor handled an event yet")
	}
	if age := e.cfg.Clock.Since(time.Unix(0, last)); age > MaxEventedAge {
		return fmt.Errorf("evented pleg was last seen active %v ago (no successful relist, no container event); threshold is %v", age.Round(time.Second), MaxEventedAge)
	}
	return nil
}

// Run subscribes to the runtime's container events and relists as the mode
// requires (see Evented) until ctx is done. It returns once the stream's
// goroutine has ended too. Call it once.
func (e *Evented) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("pleg")
	ctx = klog.NewContext(ctx, logger)
	l := &eventedLoop{e: e, delay: reconnectInitialDelay}
	defer l.stop()

	l.connect(ctx)
	// Observe the runtime now, as Generic.Run does, so that pod workers
	// need not wait for the stream; the relist when it comes up covers
	// whatever changes before that.
	l.relist(ctx)
	l.armRelist(e.cfg.RelistPeriod)
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.relistTimer.c():
			l.relistTimer.fired()
			l.relist(ctx)
			l.armRelist(l.relistPeriod())
		case <-l.reconnectTimer.c():
			l.reconnectTimer.fired()
			l.connect(ctx)
		case resp, ok := <-l.stream.events():
			switch {
			case !ok:
				err := l.stream.err
				l.stream = nil
				l.ended(ctx, err)
			case resp == l.stream.up:
				l.up(ctx)
			default:
				l.handle(ctx, resp)
			}
		}
	}
}

// eventedLoop is the state of one Run, owned by its goroutine.
type eventedLoop struct {
	e *Evented
	// stream is the current subscription; nil between a failure and the
	// next attempt, and for good once the runtime said Unimplemented.
	stream *eventStream
	// upSince is when the current stream came up; zero while it is not up.
	upSince time.Time
	// failures counts streams in a row that failed or broke without an
	// established stream in between.
	failures int
	// delay is the wait before the next reconnect (before falling back).
	// It doubles per failure and starts over once a stream stayed up for
	// reconnectMaxDelay, so a stream that comes up and breaks at once is
	// not reopened (and followed by a relist) every 250ms.
	delay      time.Duration
	fallenBack bool

	relistTimer    timer
	relistDue      time.Time
	reconnectTimer timer
}

func (l *eventedLoop) stop() {
	l.relistTimer.stop()
	l.reconnectTimer.stop()
	if l.stream != nil {
		l.stream.stop()
	}
}

func (l *eventedLoop) connect(ctx context.Context) {
	l.stream = startEventStream(ctx, l.e.cfg.Runtime, l.e.streamBuffer)
}

// relistPeriod is the period of the current mode.
func (l *eventedLoop) relistPeriod() time.Duration {
	if !l.upSince.IsZero() {
		return l.e.cfg.SafetyRelistPeriod
	}
	return l.e.cfg.RelistPeriod
}

func (l *eventedLoop) armRelist(d time.Duration) {
	l.relistTimer.arm(l.e.cfg.Clock, d)
	l.relistDue = l.e.cfg.Clock.Now().Add(d)
}

// relistWithin brings the next relist forward to at most d from now.
func (l *eventedLoop) relistWithin(d time.Duration) {
	if l.relistDue.After(l.e.cfg.Clock.Now().Add(d)) {
		l.armRelist(d)
	}
}

func (l *eventedLoop) relist(ctx context.Context) {
	if err := l.e.cfg.Relister.Relist(ctx); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Relist failed")
		}
		return
	}
	l.e.markActive()
}

// up handles the runtime's acceptance of the subscription. Mode turns
// "evented" last, once the relist is done and its timer armed.
func (l *eventedLoop) up(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if l.failures > 0 {
		logger.Info("Container event stream is up again", "failedBefore", l.failures)
	} else {
		logger.V(1).Info("Container event stream is up")
	}
	l.failures = 0
	l.fallenBack = false
	l.upSince = l.e.cfg.Clock.Now()
	// Events may have been missed while the stream was not up.
	l.relist(ctx)
	l.armRelist(l.e.cfg.SafetyRelistPeriod)
	l.e.streaming.Store(true)
}

// ended handles the end of a stream. OnConnectionError is called last, once
// the reconnect is scheduled.
func (l *eventedLoop) ended(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	logger := klog.FromContext(ctx)
	wasUp, upFor := !l.upSince.IsZero(), l.e.cfg.Clock.Since(l.upSince)
	l.upSince = time.Time{}
	l.e.streaming.Store(false)
	if wasUp {
		l.armRelist(l.e.cfg.RelistPeriod)
	}
	if kubecontainer.IsUnimplemented(err) {
		logger.Info("The runtime does not serve container events; relisting instead", "relistPeriod", l.e.cfg.RelistPeriod, "err", err)
		return
	}

	l.failures++
	if wasUp && upFor >= reconnectMaxDelay {
		l.delay = reconnectInitialDelay
	}
	var wait time.Duration
	switch {
	case l.failures >= maxStreamFailures:
		wait = fallbackRetryPeriod
		if !l.fallenBack {
			l.fallenBack = true
			logger.Info("Container event stream failed repeatedly; relisting instead and retrying the stream every minute",
				"failures", l.failures, "relistPeriod", l.e.cfg.RelistPeriod, "err", err)
		} else {
			logger.V(2).Info("Container event stream failed again", "failures", l.failures, "retryAfter", wait, "err", err)
		}
	default:
		wait = l.delay
		l.delay = min(2*l.delay, reconnectMaxDelay)
		if wasUp {
			logger.Info("Container event stream broke; reconnecting", "after", wait, "err", err)
		} else {
			logger.V(2).Info("Container event stream failed; reconnecting", "failures", l.failures, "after", wait, "err", err)
		}
	}
	l.reconnectTimer.arm(l.e.cfg.Clock, wait)
	if l.e.cfg.OnConnectionError != nil {
		l.e.cfg.OnConnectionError()
	}
}

// handle brings the cache up to date with one event and emits its Event.
func (l *eventedLoop) handle(ctx context.Context, resp *runtimeapi.ContainerEventResponse) {
	e := l.e
	e.markActive()
	logger := klog.FromContext(ctx)
	uid, known := eventPodUID(resp)
	if uid == "" {
		if !known {
			// The event names no pod, so a relist has to tell which
			// changed.
			logger.V(4).Info("Container event without statuses; relisting soon", "containerID", resp.GetContainerId())
			l.relistWithin(e.cfg.RelistPeriod)
		}
		// Else the pod is not ours (no pod UID label): ignored, as
		// Generic ignores it.
		return
	}
	logger = klog.LoggerWithValues(logger, "podUID", uid, "containerID", resp.GetContainerId())
	status, ts, err := e.eventStatus(ctx, uid, resp)
	if err != nil {
		if ctx.Err() == nil {
			logger.V(2).Info("Reading pod status for a container event failed; relisting soon", "err", err)
			l.relistWithin(e.cfg.RelistPeriod)
		}
		return
	}
	if !e.cfg.Cache.Set(uid, status, nil, ts) {
		logger.V(5).Info("Container event is not newer than the cached status; ignored", "eventTime", ts)
		return
	}
	e.cfg.Relister.Emit(&Event{ID: uid, Type: eventType(resp.GetContainerEventType()), Data: resp.GetContainerId(), Time: ts})
}

func (e *Evented) markActive() {
	e.lastActive.Store(e.cfg.Clock.Now().UnixNano())
}

// eventStatus returns the pod's status after the event and the time it
// reflects: the cached status with the event's statuses merged in, at the
// event's time; or, when the event cannot be trusted to be complete, the
// runtime's answer, at a time taken before asking.
func (e *Evented) eventStatus(ctx context.Context, uid types.UID, resp *runtimeapi.ContainerEventResponse) (*kubecontainer.PodStatus, time.Time, error) {
	now := e.cfg.Clock.Now()
	if ts, ok := eventTime(resp.GetCreatedAt()); ok && !ts.After(now) && selfContained(resp) {
		old, _ := e.cfg.Cache.Get(uid)
		return mergeEvent(old, uid, resp, ts), ts, nil
	}
	st, err := kubecontainer.GetPodStatus(ctx, e.cfg.Runtime, uid, now)
	if err != nil {
		return nil, now, fmt.Errorf("status of pod %s after an event for %s: %w", uid, resp.GetContainerId(), err)
	}
	return st, now, nil
}

// eventTime converts a ContainerEventResponse's CreatedAt. CRI says
// nanoseconds, and containerd sends them; some runtimes send seconds. ok is
// false when the event carries no time.
func eventTime(v int64) (t time.Time, ok bool) {
	switch {
	case v <= 0:
		return time.Time{}, false
	case v < secondsBelow:
		return time.Unix(v, 0), true
	default:
		return time.Unix(0, v), true
	}
}

// eventPodUID returns the UID of the pod an event is about, read from the
// pod UID label of its sandbox or, lacking a sandbox status, of its
// containers. known is false when the event carries no status at all to
// read it from; an empty uid with known true is an object that is not a pod
// of ours.
func eventPodUID(resp *runtimeapi.ContainerEventResponse) (uid types.UID, known bool) {
	if sb := resp.GetPodSandboxStatus(); sb != nil {
		return kubecontainer.PodUIDFromLabels(sb.GetLabels()), true
	}
	for _, c := range resp.GetContainersStatuses() {
		if uid := kubecontainer.PodUIDFromLabels(c.GetLabels()); uid != "" {
			return uid, true
		}
	}
	return "", len(resp.GetContainersStatuses()) > 0
}

// selfContained reports whether an event carries all the statuses of its
// sandbox: the sandbox's own, and the event's container's unless it was
// deleted. containerd sends an event without container statuses when it
// failed to read them; merging that would drop live containers.
func selfContained(resp *runtimeapi.ContainerEventResponse) bool {
	sb := resp.GetPodSandboxStatus()
	if sb.GetId() == "" {
		return false
	}
	id := resp.GetContainerId()
	if id == sb.GetId() || resp.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		return true
	}
	for _, c := range resp.GetContainersStatuses() {
		if c.GetId() == id {
			return true
		}
	}
	return false
}

// mergeEvent returns a new status of pod uid at ts: old (which may be nil)
// with the event's sandbox and that sandbox's containers replaced by what
// the event carries. Sandboxes and containers of other sandboxes are kept;
// containers of the event's sandbox that it no longer lists are dropped, as
// is everything of a sandbox the event says was deleted. old is not changed.
func mergeEvent(old *kubecontainer.PodStatus, uid types.UID, resp *runtimeapi.ContainerEventResponse, ts time.Time) *kubecontainer.PodStatus {
	sb := resp.GetPodSandboxStatus()
	deleted := resp.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
	sandboxGone := deleted && resp.GetContainerId() == sb.GetId()

	st := &kubecontainer.PodStatus{ID: uid, TimeStamp: ts}
	if old != nil {
		for _, s := range old.Sandboxes {
			if s.GetId() != sb.GetId() {
				st.Sandboxes = append(st.Sandboxes, s)
			}
		}
		for _, c := range old.Containers {
			if c.SandboxID != sb.GetId() {
				st.Containers = append(st.Containers, c)
			}
		}
	}
	if !sandboxGone {
		st.Sandboxes = append(st.Sandboxes, sb)
		for _, c := range resp.GetContainersStatuses() {
			if deleted && c.GetId() == resp.GetContainerId() {
				continue
			}
			st.Containers = append(st.Containers, kubecontainer.FromCRIStatus(c, sb.GetId()))
		}
	}
	// Newest first, as GetPodStatus orders them.
	slices.SortStableFunc(st.Sandboxes, func(a, b *runtimeapi.PodSandboxStatus) int {
		return cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt())
	})
	slices.SortStableFunc(st.Containers, func(a, b *kubecontainer.ContainerStatus) int {
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	if len(st.Sandboxes) > 0 {
		md := st.Sandboxes[0].GetMetadata()
		st.Name, st.Namespace = md.GetName(), md.GetNamespace()
		st.IPs = kubecontainer.SandboxIPs(st.Sandboxes[0])
	}
	return st
}

func eventType(t runtimeapi.ContainerEventType) EventType {
	switch t {
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		return ContainerStarted
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		return ContainerDied
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		return ContainerRemoved
	default: // CONTAINER_CREATED_EVENT
		return ContainerChanged
	}
}

// eventStream is one GetContainerEvents call, running on its own goroutine,
// which does nothing but feed ch.
type eventStream struct {
	// ch carries, in order: up, once the runtime accepted the
	// subscription; then each event the runtime sends. Buffer: the
	// Evented's streamBuffer. Written by the stream's goroutine (through
	// GetContainerEvents and its callback) and closed by it once
	// GetContainerEvents has returned; read only by Run's goroutine, which
	// drains it to the close when it abandons the stream (stop), so the
	// goroutine never stays blocked on it.
	ch chan *runtimeapi.ContainerEventResponse
	// up is a marker that no runtime sends; compared by address.
	up *runtimeapi.ContainerEventResponse
	// err is why the stream ended; written before ch is closed, read after.
	err    error
	cancel context.CancelFunc
}

func startEventStream(ctx context.Context, rt eventedRuntime, buffer int) *eventStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &eventStream{
		ch:     make(chan *runtimeapi.ContainerEventResponse, buffer),
		up:     &runtimeapi.ContainerEventResponse{},
		cancel: cancel,
	}
	go func() {
		defer close(s.ch)
		defer cancel()
		err := rt.GetContainerEvents(crilog.QuietErrors(ctx), s.ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
			s.ch <- s.up
		})
		if err == nil {
			err = fmt.Errorf("container event stream ended")
		}
		s.err = fmt.Errorf("container event stream: %w", err)
	}()
	return s
}

// events returns the stream's channel; nil (never ready) for no stream.
func (s *eventStream) events() <-chan *runtimeapi.ContainerEventResponse {
	if s == nil {
		return nil
	}
	return s.ch
}

// stop ends the stream and waits for its goroutine, discarding what it
// still sends.
func (s *eventStream) stop() {
	s.cancel()
	for range s.ch {
	}
}

// timer is a clock.Timer that can be disarmed; its zero value is disarmed.
// Owned by one goroutine.
type timer struct {
	t clock.Timer
}

// arm (re)starts the timer to fire after d. A firing of the old timer that
// was not received is discarded with it.
func (t *timer) arm(c clock.WithTicker, d time.Duration) {
	t.stop()
	t.t = c.NewTimer(d)
}

func (t *timer) stop() {
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
}

// c returns the channel the timer fires on; nil (never ready) when
// disarmed.
func (t *timer) c() <-chan time.Time {
	if t.t == nil {
		return nil
	}
	return t.t.C()
}

// fired records that the firing was received.
func (t *timer) fired() { t.t = nil }
