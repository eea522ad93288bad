package housekeeping

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
)

// recordingCleaner records what keep answered for a fixed set of pod
// directories at each cleanup.
type recordingCleaner struct {
	dirs []types.UID
	// runs receives, per cleanup, the directories keep did not keep.
	runs chan []types.UID
}

func (r *recordingCleaner) CleanupOrphans(_ context.Context, keep func(types.UID) bool) error {
	var gone []types.UID
	for _, uid := range r.dirs {
		if !keep(uid) {
			gone = append(gone, uid)
		}
	}
	r.runs <- gone
	return nil
}

func TestPodDirs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	rec := &recordingCleaner{dirs: []types.UID{"a", "b", "c"}, runs: make(chan []types.UID, 4)}
	inUse := map[types.UID]bool{"b": true}
	c := NewPodDirs(PodDirsConfig{Dirs: rec, InUse: func() map[types.UID]bool { return inUse }})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	// Requests never block; several collapse into at least one run.
	for range 5 {
		c.Request()
	}
	select {
	case gone := <-rec.runs:
		if len(gone) != 2 || gone[0] != "a" || gone[1] != "c" {
			t.Errorf("cleaned %v, want [a c]", gone)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no cleanup ran")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end with its context")
	}
}
