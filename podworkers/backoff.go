package podworkers

import (
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// backOff is the container restart backoff (CrashLoopBackOff). The first
// exit of a container is restarted at once; each later exit waits initial,
// then twice as long as the one before, up to max. An exit after the
// container ran for reset or longer counts as a first exit again. Safe for
// concurrent use.
type backOff struct {
	clock   clock.PassiveClock
	initial time.Duration
	max     time.Duration
	reset   time.Duration

	mu      sync.Mutex
	entries map[string]*backOffEntry
}

type backOffEntry struct {
	// exit is the finish time of the newest exit seen.
	exit time.Time
	// wait is what that exit waits before the restart.
	wait time.Duration
	// next is what the exit after it will wait.
	next time.Duration
}

func newBackOff(c clock.PassiveClock, initial, max, reset time.Duration) *backOff {
	return &backOff{clock: c, initial: initial, max: max, reset: reset, entries: map[string]*backOffEntry{}}
}

// remaining returns how long a container that ran from startedAt to
// finishedAt must still wait before it is started again.
func (b *backOff) remaining(key string, startedAt, finishedAt time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	switch {
	case !ok || finishedAt.Sub(startedAt) >= b.reset:
		e = &backOffEntry{exit: finishedAt, wait: 0, next: b.initial}
		b.entries[key] = e
	case finishedAt.After(e.exit):
		e.exit, e.wait, e.next = finishedAt, e.next, min(e.next*2, b.max)
	}
	return max(0, e.wait-b.clock.Since(finishedAt))
}

// forget drops every entry whose key starts with prefix (all of a pod's
// entries when the pod is gone).
func (b *backOff) forget(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if strings.HasPrefix(k, prefix) {
			delete(b.entries, k)
		}
	}
}
