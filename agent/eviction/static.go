package eviction

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// The back-off of a static pod evicted again and again: the first restart
// may come as soon as its pressure has cleared (a pod evicted for its own
// local storage limit waits staticBackOffInitial), the next ones wait at
// least staticBackOffInitial after the eviction, doubling up to
// staticBackOffMax; staticBackOffReset after its last eviction it starts
// over.
const (
	staticBackOffInitial = 10 * time.Second
	staticBackOffMax     = 5 * time.Minute
	staticBackOffReset   = 10 * time.Minute
)

// staticEviction is a static pod evicted and not started again yet, or
// started again after an eviction (for the back-off).
type staticEviction struct {
	// condition is the pressure it was evicted for; "" when it was for
	// its own local storage limit.
	condition v1.NodeConditionType
	evictedAt time.Time
	// backOff is how long after evictedAt it may start again at the
	// earliest; 0 the first time.
	backOff time.Duration
	// pending: evicted, not started again yet.
	pending bool
}

// staticEvicted records the eviction of a static pod, for restartStatic:
// condition is the pressure it was evicted for ("" for its own local
// storage limit), refused says the node refused it at admission instead.
func (m *Manager) staticEvicted(pod *v1.Pod, condition v1.NodeConditionType, refused bool) {
	now := m.cfg.Clock.Now()
	m.staticMu.Lock()
	defer m.staticMu.Unlock()
	e, ok := m.static[pod.UID]
	switch {
	case (!ok || now.Sub(e.evictedAt) >= staticBackOffReset) && condition == "" && !refused:
		// Evicted for its own limit: no pressure to wait for, and it
		// would fill up again at once.
		e = &staticEviction{backOff: staticBackOffInitial}
	case !ok || now.Sub(e.evictedAt) >= staticBackOffReset:
		e = &staticEviction{}
	case e.backOff == 0:
		e.backOff = staticBackOffInitial
	default:
		e.backOff = min(2*e.backOff, staticBackOffMax)
	}
	e.condition, e.evictedAt, e.pending = condition, now, true
	m.static[pod.UID] = e
}

// restartStatic starts again the evicted static pods whose pressure
// condition has cleared (it is held for the transition period after its
// thresholds stop being met) and whose back-off has passed, provided the
// node admits them now. Static pods whose manifest is gone are forgotten.
func (m *Manager) restartStatic(ctx context.Context, now time.Time) {
	logger := klog.FromContext(ctx)
	m.mu.RLock()
	conds := m.conditions
	m.mu.RUnlock()
	// Asked without staticMu held: the syncLoop calls AdmitNew meanwhile.
	for _, uid := range m.staticDue(now, conds) {
		pod := m.cfg.Pods.Get(uid)
		if pod == nil {
			continue
		}
		if ok, reason, msg := m.Admit(pod); !ok {
			logger.V(2).Info("Evicted static pod not started again yet: the node would not admit it", "pod", klog.KObj(pod), "reason", reason, "message", msg)
			continue
		}
		if m.ask(ctx, Request{Op: OpRestart, Pod: pod}) {
			logger.Info("Starting an evicted static pod again: its pressure has cleared", "pod", klog.KObj(pod), "podUID", uid)
			m.staticMu.Lock()
			if e := m.static[uid]; e != nil {
				e.pending = false
			}
			m.staticMu.Unlock()
		}
	}
}

// staticDue returns the static pods due to start again at now under the
// conditions conds, and forgets those whose manifest is gone or whose
// back-off has been reset.
func (m *Manager) staticDue(now time.Time, conds []v1.NodeConditionType) []types.UID {
	m.staticMu.Lock()
	defer m.staticMu.Unlock()
	var due []types.UID
	for uid, e := range m.static {
		if m.cfg.Pods.Get(uid) == nil || (!e.pending && now.Sub(e.evictedAt) >= staticBackOffReset) {
			delete(m.static, uid)
			continue
		}
		if !e.pending || (e.condition != "" && hasCondition(conds, e.condition)) || now.Before(e.evictedAt.Add(e.backOff)) {
			continue
		}
		due = append(due, uid)
	}
	return due
}
