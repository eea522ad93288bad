package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (c *Cache) waiterCount(uid types.UID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters[uid])
}

func (c *Cache) totalWaiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ws := range c.waiters {
		n += len(ws)
	}
	return n
}

func statusAt(uid types.UID, ts time.Time) *kubecontainer.PodStatus {
	return &kubecontainer.PodStatus{ID: uid, Name: ts.Format(time.RFC3339Nano), TimeStamp: ts}
}

type getResult struct {
	status *kubecontainer.PodStatus
	err    error
}

// getAsync runs GetNewerThan in a goroutine and returns its result channel.
func getAsync(ctx context.Context, c *Cache, uid types.UID, minTime time.Time) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		st, err := c.GetNewerThan(ctx, uid, minTime)
		ch <- getResult{st, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan getResult) getResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("GetNewerThan did not return")
		return getResult{}
	}
}

func TestCacheSetKeepsNewest(t *testing.T) {
	tests := []struct {
		name     string
		sets     []time.Time
		accepted []bool
		want     time.Time
	}{
		{"newer overwrites", []time.Time{t0, t0.Add(time.Second)}, []bool{true, true}, t0.Add(time.Second)},
		{"older does not overwrite", []time.Time{t0.Add(time.Second), t0}, []bool{true, false}, t0.Add(time.Second)},
		{"equal does not overwrite", []time.Time{t0, t0}, []bool{true, false}, t0},
		{"older after newer after older", []time.Time{t0, t0.Add(2 * time.Second), t0.Add(time.Second)}, []bool{true, true, false}, t0.Add(2 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			var stored []*kubecontainer.PodStatus
			for i, ts := range tt.sets {
				st := statusAt("uid", ts)
				stored = append(stored, st)
				if got := c.Set("uid", st, nil, ts); got != tt.accepted[i] {
					t.Errorf("Set #%d at %v = %v, want %v", i, ts, got, tt.accepted[i])
				}
			}
			got, err := c.Get("uid")
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !got.TimeStamp.Equal(tt.want) {
				t.Errorf("Get returns the status of %v, want %v", got.TimeStamp, tt.want)
			}
			// The very object stored at the winning time is returned.
			for i, ts := range tt.sets {
				if ts.Equal(tt.want) && tt.accepted[i] && got != stored[i] {
					t.Errorf("Get returned a different object than the one Set at %v", ts)
				}
			}
		})
	}
}

func TestCacheSetError(t *testing.T) {
	c := NewCache()
	boom := errors.New("boom")
	c.Set("uid", statusAt("uid", t0), nil, t0)
	c.Set("uid", nil, boom, t0.Add(time.Second))
	st, err := c.Get("uid")
	if st != nil || !errors.Is(err, boom) {
		t.Errorf("Get = %v, %v; want nil, %v", st, err, boom)
	}
	st, err = c.GetNewerThan(context.Background(), "uid", t0.Add(time.Second))
	if st != nil || !errors.Is(err, boom) {
		t.Errorf("GetNewerThan = %v, %v; want nil, %v", st, err, boom)
	}
}

func TestCacheGetUnknown(t *testing.T) {
	c := NewCache()
	st, err := c.Get("nope")
	if err != nil || st == nil || st.ID != "nope" || len(st.Containers) != 0 || !st.TimeStamp.IsZero() {
		t.Errorf("Get(unknown) = %+v, %v; want empty status with zero time", st, err)
	}
}

func TestCacheGetNewerThanFresh(t *testing.T) {
	tests := []struct {
		name string
		set  time.Time
		min  time.Time
	}{
		{"equal", t0, t0},
		{"newer", t0.Add(time.Second), t0},
		{"zero min", t0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			want := statusAt("uid", tt.set)
			c.Set("uid", want, nil, tt.set)
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a fresh entry is returned even when ctx is already done
			got, err := c.GetNewerThan(ctx, "uid", tt.min)
			if err != nil || got != want {
				t.Errorf("GetNewerThan = %v, %v; want the stored status", got, err)
			}
			if n := c.totalWaiters(); n != 0 {
				t.Errorf("%d waiters left", n)
			}
		})
	}
}

func TestCacheGetNewerThanBlocks(t *testing.T) {
	tests := []struct {
		name string
		// wake makes the entry fresh enough (>= t0+2s); before it the
		// entry is at t0+1s.
		wake func(c *Cache)
		// want is the TimeStamp of the status returned.
		want time.Time
	}{
		{
			name: "Set",
			wake: func(c *Cache) { c.Set("uid", statusAt("uid", t0.Add(3*time.Second)), nil, t0.Add(3*time.Second)) },
			want: t0.Add(3 * time.Second),
		},
		{
			name: "Set exactly at min",
			wake: func(c *Cache) { c.Set("uid", statusAt("uid", t0.Add(2*time.Second)), nil, t0.Add(2*time.Second)) },
			want: t0.Add(2 * time.Second),
		},
		{
			// UpdateTime says the entry (set at t0+1s below) is still
			// current at t0+2s.
			name: "UpdateTime",
			wake: func(c *Cache) { c.UpdateTime(t0.Add(2 * time.Second)) },
			want: t0.Add(time.Second),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			c.Set("uid", statusAt("uid", t0), nil, t0)
			ch := getAsync(context.Background(), c, "uid", t0.Add(2*time.Second))
			polltest.True(t, 5*time.Second, "a waiter", func() bool { return c.waiterCount("uid") == 1 })

			// Not fresh enough: neither wakes it.
			c.Set("uid", statusAt("uid", t0.Add(time.Second)), nil, t0.Add(time.Second))
			c.UpdateTime(t0.Add(time.Second))
			c.Set("other", statusAt("other", t0.Add(time.Hour)), nil, t0.Add(time.Hour))
			select {
			case r := <-ch:
				t.Fatalf("GetNewerThan returned early: %+v", r)
			default:
			}
			if n := c.waiterCount("uid"); n != 1 {
				t.Fatalf("%d waiters, want 1", n)
			}

			tt.wake(c)
			r := receive(t, ch)
			if r.err != nil {
				t.Fatalf("GetNewerThan: %v", r.err)
			}
			if !r.status.TimeStamp.Equal(tt.want) {
				t.Errorf("status TimeStamp = %v, want %v", r.status.TimeStamp, tt.want)
			}
			if n := c.totalWaiters(); n != 0 {
				t.Errorf("%d waiters left", n)
			}
		})
	}
}

func TestCacheGetNewerThanManyWaiters(t *testing.T) {
	c := NewCache()
	early := getAsync(context.Background(), c, "uid", t0)
	late := getAsync(context.Background(), c, "uid", t0.Add(time.Minute))
	polltest.True(t, 5*time.Second, "two waiters", func() bool { return c.waiterCount("uid") == 2 })

	c.Set("uid", statusAt("uid", t0), nil, t0)
	if r := receive(t, early); r.err != nil || !r.status.TimeStamp.Equal(t0) {
		t.Errorf("early waiter got %+v", r)
	}
	if n := c.waiterCount("uid"); n != 1 {
		t.Fatalf("%d waiters after the first woke, want 1", n)
	}
	c.UpdateTime(t0.Add(time.Minute))
	if r := receive(t, late); r.err != nil {
		t.Errorf("late waiter got %+v", r)
	}
	if n := c.totalWaiters(); n != 0 {
		t.Errorf("%d waiters left", n)
	}
}

func TestCacheGetNewerThanCancel(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		// cancel: the test cancels ctx once the call waits; else ctx
		// ends by itself.
		cancel  bool
		wantErr error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, true, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, false, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			// Another waiter for the same pod must survive the cancellation.
			otherCtx, otherCancel := context.WithCancel(context.Background())
			defer otherCancel()
			other := getAsync(otherCtx, c, "uid", t0.Add(time.Hour))
			polltest.True(t, 5*time.Second, "first waiter", func() bool { return c.waiterCount("uid") == 1 })

			ctx, cancel := tt.ctx()
			defer cancel()
			ch := getAsync(ctx, c, "uid", t0)
			if tt.cancel {
				polltest.True(t, 5*time.Second, "second waiter", func() bool { return c.waiterCount("uid") == 2 })
				cancel()
			}
			r := receive(t, ch)
			if !errors.Is(r.err, tt.wantErr) || r.status != nil {
				t.Errorf("GetNewerThan = %v, %v; want nil, %v", r.status, r.err, tt.wantErr)
			}
			if n := c.waiterCount("uid"); n != 1 {
				t.Errorf("%d waiters after cancel, want 1 (the other one)", n)
			}
			otherCancel()
			receive(t, other)
			if n := c.totalWaiters(); n != 0 {
				t.Errorf("%d waiters left", n)
			}
			c.mu.Lock()
			_, present := c.waiters["uid"]
			c.mu.Unlock()
			if present {
				t.Error("an empty waiter list is left in the map")
			}
		})
	}
}

func TestCacheUpdateTime(t *testing.T) {
	c := NewCache()
	c.UpdateTime(t0)
	st, err := c.GetNewerThan(context.Background(), "unknown", t0)
	if err != nil {
		t.Fatalf("GetNewerThan: %v", err)
	}
	if st == nil || st.ID != "unknown" || len(st.Sandboxes) != 0 || len(st.Containers) != 0 || !st.TimeStamp.Equal(t0) {
		t.Errorf("unknown pod after UpdateTime = %+v; want empty status at %v", st, t0)
	}

	// An older UpdateTime does not move the global time back.
	c.UpdateTime(t0.Add(-time.Hour))
	if st, _ := c.Get("unknown"); !st.TimeStamp.Equal(t0) {
		t.Errorf("global time moved back to %v", st.TimeStamp)
	}

	// A known entry older than the global time reads as current as of it.
	c.Set("old", statusAt("old", t0.Add(-time.Minute)), nil, t0.Add(-time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err = c.GetNewerThan(ctx, "old", t0)
	if err != nil {
		t.Fatalf("GetNewerThan(old, t0): %v", err)
	}
	if !st.TimeStamp.Equal(t0.Add(-time.Minute)) {
		t.Errorf("GetNewerThan(old) returned status at %v, want the stored one", st.TimeStamp)
	}
}

func TestCacheDelete(t *testing.T) {
	c := NewCache()
	c.Set("uid", statusAt("uid", t0.Add(time.Hour)), nil, t0.Add(time.Hour))
	c.Delete("uid")
	if st, _ := c.Get("uid"); len(st.Name) != 0 {
		t.Errorf("Get after Delete = %+v, want empty", st)
	}
	// A later Set starts afresh, even with an older time.
	if !c.Set("uid", statusAt("uid", t0), nil, t0) {
		t.Error("Set after Delete refused an older time")
	}
}

func TestCacheForget(t *testing.T) {
	c := NewCache()
	for _, uid := range []types.UID{"keep", "drop", "waited"} {
		c.Set(uid, statusAt(uid, t0), nil, t0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := getAsync(ctx, c, "waited", t0.Add(time.Hour))
	polltest.True(t, 5*time.Second, "a waiter", func() bool { return c.waiterCount("waited") == 1 })

	var asked []types.UID
	c.Forget(func(uid types.UID, _ *kubecontainer.PodStatus) bool {
		asked = append(asked, uid)
		return uid != "keep"
	})
	for _, a := range asked {
		if a == "waited" {
			t.Error("Forget asked drop about a pod somebody waits for")
		}
	}
	c.mu.Lock()
	_, keep := c.pods["keep"]
	_, drop := c.pods["drop"]
	_, waited := c.pods["waited"]
	c.mu.Unlock()
	if !keep || drop || !waited {
		t.Errorf("after Forget: keep=%v drop=%v waited=%v; want true false true", keep, drop, waited)
	}
	cancel()
	receive(t, ch)
}

// Before the first relist, a pod the cache knows nothing of may well run:
// GetNewerThan(zero) must wait for the runtime to be observed.
func TestCacheGetNewerThanWaitsForFirstObservation(t *testing.T) {
	c := NewCache()
	got := make(chan error, 1)
	go func() {
		_, err := c.GetNewerThan(context.Background(), "pod", time.Time{})
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("GetNewerThan(zero) returned (%v) before the runtime was observed", err)
	case <-time.After(100 * time.Millisecond):
	}
	c.UpdateTime(time.Unix(1, 0))
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GetNewerThan not woken by the first relist")
	}
}
