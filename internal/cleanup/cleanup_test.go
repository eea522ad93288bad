package cleanup

import (
	"context"
	"errors"
	"testing"
	"time"
)

type key struct{}

func TestContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "logger"))
	cancelParent()

	ctx, cancel := Context(parent, time.Hour)
	defer cancel()
	if err := ctx.Err(); err != nil {
		t.Fatalf("cleanup context of a cancelled parent: %v, want not done", err)
	}
	if v := ctx.Value(key{}); v != "logger" {
		t.Errorf("value = %v, want the parent's", v)
	}
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) > time.Hour {
		t.Errorf("deadline = %v, %v; want within the hour", deadline, ok)
	}
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", ctx.Err())
	}

	short, cancelShort := Context(parent, time.Nanosecond)
	defer cancelShort()
	<-short.Done()
	if !errors.Is(short.Err(), context.DeadlineExceeded) {
		t.Errorf("after the timeout: %v, want context.DeadlineExceeded", short.Err())
	}
}
