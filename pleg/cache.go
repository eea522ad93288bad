package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// Cache holds the newest known runtime status of every pod.
//
// Set never lets an older status overwrite a newer one. UpdateTime records
// that a relist observed the whole runtime at a time: every entry, changed or
// not, is then known to be current as of that time. GetNewerThan blocks until
// the entry of a pod is at least as new as a given time. All methods are safe
// for concurrent use.
type Cache struct {
	mu   sync.Mutex
	pods map[types.UID]*cacheEntry
	// global is the time of the last complete relist: every entry is
	// current at least as of it.
	global time.Time
	// waiters wait for an entry newer than a time; each channel is closed
	// exactly once, by the call that satisfies it.
	waiters map[types.UID][]waiter
}

type cacheEntry struct {
	status *kubecontainer.PodStatus
	err    error
	// modified is the runtime time the status reflects.
	modified time.Time
}

type waiter struct {
	min time.Time
	ch  chan struct{}
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		pods:    make(map[types.UID]*cacheEntry),
		waiters: make(map[types.UID][]waiter),
	}
}

// Get returns the pod's status (nil when unknown) and the error of the last
// attempt to read it.
func (c *Cache) Get(uid types.UID) (*kubecontainer.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.get(uid)
	return e.status, e.err
}

// Set stores the status of a pod read at ts (err is the error of that read, if
// any). It reports false and changes nothing when the cache already holds a
// status at least as new.
func (c *Cache) Set(uid types.UID, status *kubecontainer.PodStatus, err error, ts time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && !e.modified.Before(ts) {
		return false
	}
	c.pods[uid] = &cacheEntry{status: status, err: err, modified: ts}
	c.notify(uid)
	return true
}

// UpdateTime records that the runtime was observed completely at ts.
func (c *Cache) UpdateTime(ts time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ts.After(c.global) {
		return
	}
	c.global = ts
	for uid := range c.waiters {
		c.notify(uid)
	}
}

// ForEach calls f with every pod's status; f must not call the cache.
func (c *Cache) ForEach(f func(uid types.UID, status *kubecontainer.PodStatus)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, e := range c.pods {
		if e.status != nil {
			f(uid, e.status)
		}
	}
}

// Delete forgets a pod. A later Set for it starts afresh.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// Forget deletes the entries of every pod for which drop returns true and
// that nobody waits for. drop must not call the cache.
func (c *Cache) Forget(drop func(types.UID, *kubecontainer.PodStatus) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, e := range c.pods {
		if len(c.waiters[uid]) == 0 && drop(uid, e.status) {
			delete(c.pods, uid)
		}
	}
}

// GetNewerThan returns the pod's status once the cache holds one at least as
// new as min, waiting for it if needed. It returns ctx's error if ctx ends
// first.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, min time.Time) (*kubecontainer.PodStatus, error) {
	for {
		c.mu.Lock()
		e := c.get(uid)
		if c.observed(uid) && !e.modified.Before(min) {
			c.mu.Unlock()
			return e.status, e.err
		}
		w := waiter{min: min, ch: make(chan struct{})}
		c.waiters[uid] = append(c.waiters[uid], w)
		c.mu.Unlock()
		select {
		case <-w.ch:
		case <-ctx.Done():
			c.removeWaiter(uid, w)
			return nil, ctx.Err()
		}
	}
}

// get returns the entry for uid as of now: an unknown pod is an empty status
// current as of the last relist. c.mu must be held.
func (c *Cache) get(uid types.UID) cacheEntry {
	e, ok := c.pods[uid]
	if !ok {
		return cacheEntry{status: &kubecontainer.PodStatus{ID: uid, TimeStamp: c.global}, modified: c.global}
	}
	out := *e
	if c.global.After(out.modified) {
		out.modified = c.global
	}
	return out
}

// observed reports whether the runtime has been looked at for uid at all:
// a status was stored for it, or a relist completed. Before that, an empty
// status means nothing (the runtime may hold the pod), so GetNewerThan
// waits: an agent restarted while its pods run must see them before it
// syncs, or it would start them twice. c.mu must be held.
func (c *Cache) observed(uid types.UID) bool {
	_, ok := c.pods[uid]
	return ok || !c.global.IsZero()
}

// notify wakes the waiters of uid whose time has come. c.mu must be held.
func (c *Cache) notify(uid types.UID) {
	ws := c.waiters[uid]
	if len(ws) == 0 {
		return
	}
	e := c.get(uid)
	kept := ws[:0]
	for _, w := range ws {
		if !c.observed(uid) || e.modified.Before(w.min) {
			kept = append(kept, w)
			continue
		}
		close(w.ch)
	}
	if len(kept) == 0 {
		delete(c.waiters, uid)
		return
	}
	c.waiters[uid] = kept
}

func (c *Cache) removeWaiter(uid types.UID, w waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := c.waiters[uid]
	for i := range ws {
		if ws[i].ch == w.ch {
			c.waiters[uid] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(c.waiters[uid]) == 0 {
		delete(c.waiters, uid)
	}
}
