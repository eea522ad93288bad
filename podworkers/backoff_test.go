package podworkers

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

const (
	boInitial = 10 * time.Second
	boMax     = 80 * time.Second
	boReset   = 10 * time.Minute
)

func TestBackOffSequence(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	b := newBackOff(clk, boInitial, boMax, boReset)
	// Each exit: the container ran 1s and exited now; asked right away.
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 80 * time.Second, 80 * time.Second}
	for i, w := range want {
		t.Run(fmt.Sprintf("exit %d", i+1), func(t *testing.T) {
			clk.Step(time.Hour) // long enough for any earlier back-off to be over
			finished := clk.Now()
			if got := b.remaining("uid/app/h", finished.Add(-time.Second), finished); got != w {
				t.Errorf("remaining = %v, want %v", got, w)
			}
		})
	}
}

func TestBackOffSameExitCountsDown(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	b := newBackOff(clk, boInitial, boMax, boReset)
	first := clk.Now()
	b.remaining("k", first.Add(-time.Second), first)
	clk.Step(time.Minute)
	exit := clk.Now()
	steps := []struct {
		step time.Duration
		want time.Duration
	}{
		{0, 10 * time.Second},
		{4 * time.Second, 6 * time.Second},
		{0, 6 * time.Second},
		{5 * time.Second, time.Second},
		{time.Second, 0},
		{time.Hour, 0},
	}
	for i, s := range steps {
		clk.Step(s.step)
		if got := b.remaining("k", exit.Add(-time.Second), exit); got != s.want {
			t.Errorf("ask %d (%v after the exit): remaining = %v, want %v", i, clk.Since(exit), got, s.want)
		}
	}
	// The next exit doubles once, however often the previous was asked.
	next := clk.Now()
	if got := b.remaining("k", next.Add(-time.Second), next); got != 20*time.Second {
		t.Errorf("next exit: remaining = %v, want 20s", got)
	}
}

func TestBackOffReset(t *testing.T) {
	tests := []struct {
		name string
		ran  time.Duration
		want time.Duration
	}{
		{"ran shorter than reset", boReset - time.Second, 40 * time.Second},
		{"ran exactly reset", boReset, 0},
		{"ran longer than reset", boReset + time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			b := newBackOff(clk, boInitial, boMax, boReset)
			for range 3 { // 0, 10s, 20s
				clk.Step(time.Hour)
				now := clk.Now()
				b.remaining("k", now.Add(-time.Second), now)
			}
			clk.Step(time.Hour)
			now := clk.Now()
			if got := b.remaining("k", now.Add(-tt.ran), now); got != tt.want {
				t.Errorf("remaining = %v, want %v", got, tt.want)
			}
			if tt.want == 0 {
				// Started over: the exit after waits initial.
				clk.Step(time.Hour)
				now = clk.Now()
				if got := b.remaining("k", now.Add(-time.Second), now); got != boInitial {
					t.Errorf("exit after the reset: remaining = %v, want %v", got, boInitial)
				}
			}
		})
	}
}

func TestBackOffKeysAreIndependent(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	b := newBackOff(clk, boInitial, boMax, boReset)
	for range 2 {
		clk.Step(time.Hour)
		now := clk.Now()
		b.remaining("uid-a/app/h1", now.Add(-time.Second), now)
	}
	now := clk.Now()
	if got := b.remaining("uid-a/app/h2", now.Add(-time.Second), now); got != 0 {
		t.Errorf("new spec hash: remaining = %v, want 0 (a new spec starts a new back-off)", got)
	}
	if got := b.remaining("uid-a/app/h1", now.Add(-time.Second), now); got != boInitial {
		t.Errorf("old key: remaining = %v, want %v", got, boInitial)
	}
}

func TestBackOffForget(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	b := newBackOff(clk, boInitial, boMax, boReset)
	keys := []string{"uid-a/app/h", "uid-a/side/h", "uid-ab/app/h", "uid-b/app/h"}
	for range 2 {
		clk.Step(time.Hour)
		now := clk.Now()
		for _, k := range keys {
			b.remaining(k, now.Add(-time.Second), now)
		}
	}
	b.forget("uid-a/")

	b.mu.Lock()
	var left []string
	for k := range b.entries {
		left = append(left, k)
	}
	b.mu.Unlock()
	if len(left) != 2 {
		t.Errorf("entries after forget(uid-a/) = %v, want uid-ab/app/h and uid-b/app/h", left)
	}
	clk.Step(time.Hour)
	now := clk.Now()
	tests := []struct {
		key  string
		want time.Duration
	}{
		{"uid-a/app/h", 0},
		{"uid-a/side/h", 0},
		{"uid-ab/app/h", 20 * time.Second},
		{"uid-b/app/h", 20 * time.Second},
	}
	for _, tt := range tests {
		if got := b.remaining(tt.key, now.Add(-time.Second), now); got != tt.want {
			t.Errorf("%s after forget: remaining = %v, want %v", tt.key, got, tt.want)
		}
	}
}
