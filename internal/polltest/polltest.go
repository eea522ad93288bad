package polltest

import (
	"testing"
	"time"
)

// The pause between two polls starts at firstInterval and doubles up to
// maxInterval: a condition that holds soon is seen at once, and one that
// takes seconds (a pod starting in a real runtime) costs a poll every
// 50ms.
const (
	firstInterval = time.Millisecond
	maxInterval   = 50 * time.Millisecond
)

// Until calls cond until it reports done, and fails t with t.Fatalf once
// timeout has passed without. When not done, cond describes the state it
// saw; the failure message names what was awaited, the timeout and the
// last state described, e.g. "timed out after 5s waiting for the pod to
// run; last state: Pending". cond runs on the calling goroutine, at least
// once; Until must be called from the test's goroutine (it may end it).
func Until(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := firstInterval
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			if state == "" {
				t.Fatalf("timed out after %v waiting for %s", timeout, what)
			} else {
				t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, state)
			}
			return
		}
		time.Sleep(interval)
		interval = min(2*interval, maxInterval)
	}
}

// True is Until for a condition that has no state to describe.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, timeout, what, func() (bool, string) { return cond(), "" })
}

// NoError is Until for a check that returns nil once it holds and
// otherwise an error saying why not, which is the last state reported.
func NoError(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	Until(t, timeout, what, func() (bool, string) {
		if err := check(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// holdsInterval is how often Holds checks its condition.
const holdsInterval = 100 * time.Millisecond

// Holds checks cond every 100ms for d (at least twice, first at once),
// and fails t with t.Fatalf the first time it does not hold, naming what
// was to hold, after how long it broke, and the state cond described. It
// is for what must stay true while something else goes on (a pod left
// alone while its source fails). Like Until, it must be called from the
// test's goroutine.
func Holds(t testing.TB, d time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	start := time.Now()
	for {
		if ok, state := cond(); !ok {
			t.Fatalf("%s no longer held after %v: %s", what, time.Since(start).Round(time.Millisecond), state)
			return
		}
		if time.Since(start) >= d {
			return
		}
		time.Sleep(min(holdsInterval, d))
	}
}
