package polltest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a recorder on a goroutine of its own and returns
// the failure it recorded ("" when none).
func run(wait func(t testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
	}()
	<-done
	return r.fatal
}

func TestWaits(t *testing.T) {
	for _, tt := range []struct {
		name string
		wait func(t testing.TB, calls *atomic.Int32)
		// calls is how many calls make the condition hold; 0 never.
		calls     int32
		wantFatal string
	}{
		{
			name: "Until returns once done",
			wait: func(t testing.TB, calls *atomic.Int32) {
				Until(t, time.Minute, "three calls", func() (bool, string) { return calls.Add(1) == 3, "not yet" })
			},
			calls: 3,
		},
		{
			name: "Until names what and the last state",
			wait: func(t testing.TB, calls *atomic.Int32) {
				Until(t, 20*time.Millisecond, "the impossible", func() (bool, string) {
					return false, fmt.Sprintf("call %d", calls.Add(1))
				})
			},
			wantFatal: "timed out after 20ms waiting for the impossible; last state: call ",
		},
		{
			name: "True returns once true",
			wait: func(t testing.TB, calls *atomic.Int32) {
				True(t, time.Minute, "two calls", func() bool { return calls.Add(1) == 2 })
			},
			calls: 2,
		},
		{
			name: "True without a state",
			wait: func(t testing.TB, calls *atomic.Int32) {
				True(t, 10*time.Millisecond, "nothing", func() bool { calls.Add(1); return false })
			},
			wantFatal: "timed out after 10ms waiting for nothing",
		},
		{
			name: "NoError returns once nil",
			wait: func(t testing.TB, calls *atomic.Int32) {
				NoError(t, time.Minute, "no error", func() error {
					if calls.Add(1) < 4 {
						return errors.New("still failing")
					}
					return nil
				})
			},
			calls: 4,
		},
		{
			name: "NoError reports the last error",
			wait: func(t testing.TB, calls *atomic.Int32) {
				NoError(t, 10*time.Millisecond, "a file", func() error { calls.Add(1); return errors.New("no such file") })
			},
			wantFatal: "timed out after 10ms waiting for a file; last state: no such file",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			fatal := run(func(r testing.TB) { tt.wait(r, &calls) })
			switch {
			case tt.wantFatal == "" && fatal != "":
				t.Errorf("failed with %q", fatal)
			case tt.wantFatal != "" && !strings.HasPrefix(fatal, tt.wantFatal):
				t.Errorf("failure %q, want it to start with %q", fatal, tt.wantFatal)
			case tt.calls != 0 && calls.Load() != tt.calls:
				t.Errorf("condition called %d times, want %d (no call after it held)", calls.Load(), tt.calls)
			case tt.calls == 0 && calls.Load() < 2:
				t.Errorf("condition called %d times before the timeout, want it polled", calls.Load())
			}
		})
	}
}

func TestHolds(t *testing.T) {
	for _, tt := range []struct {
		name string
		// breakAt is the call at which cond stops holding; 0 never.
		breakAt   int32
		wantFatal string
	}{
		{name: "holds throughout"},
		{name: "breaks", breakAt: 2, wantFatal: "the answer no longer held after "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			start := time.Now()
			fatal := run(func(r testing.TB) {
				Holds(r, 250*time.Millisecond, "the answer", func() (bool, string) {
					n := calls.Add(1)
					return n != tt.breakAt, fmt.Sprintf("call %d", n)
				})
			})
			switch {
			case tt.wantFatal == "" && fatal != "":
				t.Errorf("failed with %q", fatal)
			case tt.wantFatal == "" && (time.Since(start) < 250*time.Millisecond || calls.Load() < 3):
				t.Errorf("returned after %v and %d calls; want it to check for 250ms", time.Since(start), calls.Load())
			case tt.wantFatal != "" && (!strings.HasPrefix(fatal, tt.wantFatal) || !strings.HasSuffix(fatal, ": call 2")):
				t.Errorf("failure %q, want it to start with %q and end with the state", fatal, tt.wantFatal)
			case tt.wantFatal != "" && calls.Load() != tt.breakAt:
				t.Errorf("cond called %d times, want no call after it broke", calls.Load())
			}
		})
	}
}
