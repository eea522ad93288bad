package housekeeping

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPodLogDirsCleanup(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-time.Minute)
	entries := []struct {
		name  string
		isDir bool
		mtime time.Time
		keep  bool
	}{
		{"default_used-node_uid-used", true, old, true},
		{"default_gone-node_uid-gone", true, old, false},
		{"kube-system_gone2-node_uid-gone2", true, old, false},
		{"default_fresh-node_uid-fresh", true, now.Add(-time.Second), true},
		{"default_file-node_uid-file", false, old, true},
		{"not-a-pod", true, old, true},
		{"a_b_c_d", true, old, true},
		{"notes.txt", false, old, true},
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.name)
		if e.isDir {
			if err := os.MkdirAll(filepath.Join(p, "main"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "main", "0.log"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, e.mtime, e.mtime); err != nil {
			t.Fatal(err)
		}
	}
	l := podLogDirs{dir: dir, clock: clocktesting.NewFakePassiveClock(now)}
	inUse := func() map[types.UID]bool { return map[types.UID]bool{"uid-used": true} }
	if err := l.cleanup(ctx, inUse); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	for _, e := range entries {
		_, err := os.Lstat(filepath.Join(dir, e.name))
		if kept := err == nil; kept != e.keep {
			t.Errorf("%s: kept=%v, want %v", e.name, kept, e.keep)
		}
	}

	// The directory is read before the pods in use are: a pod that comes
	// into use meanwhile keeps its directory all the same.
	calls := 0
	late := func() map[types.UID]bool {
		calls++
		return map[types.UID]bool{"uid-used": true, "uid-fresh": true}
	}
	if err := (podLogDirs{dir: dir, clock: clocktesting.NewFakePassiveClock(now.Add(time.Hour))}).cleanup(ctx, late); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("inUse called %d times, want once", calls)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	want := []string{"a_b_c_d", "default_file-node_uid-file", "default_fresh-node_uid-fresh", "default_used-node_uid-used", "not-a-pod", "notes.txt"}
	if !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}

	// No directory, no log directories: nothing to do.
	if err := (podLogDirs{dir: filepath.Join(dir, "missing"), clock: clocktesting.NewFakePassiveClock(now)}).cleanup(ctx, inUse); err != nil {
		t.Errorf("cleanup of a missing dir: %v", err)
	}
	if err := (podLogDirs{}).cleanup(ctx, inUse); err != nil {
		t.Errorf("cleanup with no dir: %v", err)
	}
}
