package podworkers

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestSandboxWindowTurns(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newSandboxWindow(2, 10*time.Second, clk)
	ctx := context.Background()
	leave1, err := w.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leave2, err := w.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	third := make(chan func(), 1)
	go func() {
		leave, err := w.enter(ctx)
		if err != nil {
			t.Error(err)
		}
		third <- leave
	}()
	select {
	case <-third:
		t.Fatal("a third call entered a window of 2")
	case <-time.After(50 * time.Millisecond):
	}
	leave1()
	leave1() // twice is once
	var leave3 func()
	select {
	case leave3 = <-third:
	case <-time.After(5 * time.Second):
		t.Fatal("a turn given back, but the waiting call did not enter")
	}
	if got := len(w.turns); got != 2 {
		t.Errorf("%d turns taken after one of three left, want 2", got)
	}
	leave2()
	leave3()
	if got := len(w.turns); got != 0 {
		t.Errorf("%d turns taken after all left, want 0", got)
	}
}

func TestSandboxWindowStuckCallGivesItsTurnUp(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newSandboxWindow(1, 10*time.Second, clk)
	ctx := context.Background()
	leaveStuck, err := w.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan func(), 1)
	go func() {
		leave, err := w.enter(ctx)
		if err != nil {
			t.Error(err)
		}
		next <- leave
	}()
	clk.Step(9 * time.Second)
	select {
	case <-next:
		t.Fatal("entered while the call before was 9s in, short of stuck")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(time.Second)
	var leaveNext func()
	select {
	case leaveNext = <-next:
	case <-time.After(5 * time.Second):
		t.Fatal("the call before was stuck for 10s, yet the next did not enter")
	}
	// The stuck call returning later gives back nothing more: the next
	// call still holds the only turn.
	leaveStuck()
	if got := len(w.turns); got != 1 {
		t.Errorf("%d turns taken, want the next call's 1", got)
	}
	leaveNext()
	if got := len(w.turns); got != 0 {
		t.Errorf("%d turns taken after all left, want 0", got)
	}
}

func TestSandboxWindowWaitEndsWithThePod(t *testing.T) {
	w := newSandboxWindow(1, 10*time.Second, testingclock.NewFakeClock(time.Now()))
	leave, err := w.enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.enter(ctx)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("waiting call ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pod's context ended, but its wait for a turn did not")
	}
}

func TestNoSandboxWindow(t *testing.T) {
	for _, n := range []int{0, -1} {
		w := newSandboxWindow(n, time.Second, testingclock.NewFakeClock(time.Now()))
		if w != nil {
			t.Fatalf("window of %d is %v, want none", n, w)
		}
		for range 100 {
			if _, err := w.enter(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}
