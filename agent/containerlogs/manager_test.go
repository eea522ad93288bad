package containerlogs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// fakeRuntime records reopens and, like a runtime, starts a new log file.
type fakeRuntime struct {
	path    string
	reopens int
	fail    error
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, _ string) error {
	if f.fail != nil {
		return f.fail
	}
	f.reopens++
	return os.WriteFile(f.path, nil, 0o640)
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestRotateKeepsMaxFilesAndCompresses(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{path: log}
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	m := New(Config{Runtime: rt, MaxSize: 100, MaxFiles: 3, Clock: clock})
	c := Container{ID: "c1", LogPath: log}

	// Under the size: nothing happens.
	if err := os.WriteFile(log, []byte(strings.Repeat("a", 99)), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := m.Rotate(context.Background(), c); err != nil || rt.reopens != 0 {
		t.Fatalf("rotated a small log: %v, %d reopens", err, rt.reopens)
	}
	for i, fill := range []string{"a", "b", "c", "d"} {
		if err := os.WriteFile(log, []byte(strings.Repeat(fill, 150)), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := m.Rotate(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if rt.reopens != i+1 {
			t.Fatalf("rotation %d: %d reopens", i, rt.reopens)
		}
		clock.Step(time.Minute)
	}
	// A cleanup pass (the next interval) compresses all but the newest
	// rotated file; 3 files in all: the current one and two rotated.
	if err := m.Rotate(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	got := files(t, dir)
	want := []string{"0.log", "0.log.20261121-100200.gz", "0.log.20261121-100300"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v; want %v", got, want)
	}
	zf, err := os.Open(filepath.Join(dir, want[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	zr, err := gzip.NewReader(zf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(zr)
	if string(b) != strings.Repeat("c", 150) {
		t.Errorf("compressed content %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, want[2])); string(b) != strings.Repeat("d", 150) {
		t.Errorf("newest rotated content %q", b)
	}
}

func TestRotateUndoneWhenReopenFails(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{path: log, fail: errors.New("runtime down")}
	m := New(Config{Runtime: rt, MaxSize: 10, MaxFiles: 5, Clock: clocktesting.NewFakeClock(time.Now())})
	if err := os.WriteFile(log, []byte("0123456789abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	err := m.Rotate(context.Background(), Container{ID: "c1", LogPath: log})
	if err == nil || !strings.Contains(err.Error(), "runtime down") {
		t.Fatalf("error %v", err)
	}
	if got := files(t, dir); len(got) != 1 || got[0] != "0.log" {
		t.Fatalf("files %v; want the log back in place", got)
	}
}

func TestRunRotatesOnTheInterval(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{path: log}
	clock := clocktesting.NewFakeClock(time.Now())
	m := New(Config{Runtime: rt, MaxSize: 10, MaxFiles: 2, Interval: 10 * time.Second, Clock: clock,
		Running: func() []Container { return []Container{{ID: "c1", LogPath: log}} }})
	if err := os.WriteFile(log, []byte("0123456789abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	// Each poll lets the manager's next check come once it waits for it.
	polltest.Until(t, 5*time.Second, "the log rotated", func() (bool, string) {
		if got := files(t, dir); len(got) == 2 {
			return true, ""
		}
		if clock.HasWaiters() {
			clock.Step(10 * time.Second)
		}
		return false, fmt.Sprintf("files %v", files(t, dir))
	})
	cancel()
	<-done
}

// rotatedFiles finds <log>.<timestamp>[.gz] beside a log whose path holds
// glob metacharacters, oldest first, leaves other files alone and drops
// what an interrupted compression left.
func TestRotatedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ns_po[d]*?_uid", "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "0.log")
	for _, name := range []string{"0.log", "0.log.20261121-100005", "0.log.20261121-100004.gz", "0.log.20261121-100006.gz.tmp", "0.logs", "1.log.20261121-100001", "x0.log.1"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	got, err := rotatedFiles(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "0.log.20261121-100004.gz"), filepath.Join(dir, "0.log.20261121-100005")}
	if !slices.Equal(got, want) {
		t.Errorf("rotatedFiles = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "0.log.20261121-100006.gz.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted compression's temp file is still there: %v", err)
	}
	if got, err := rotatedFiles(filepath.Join(t.TempDir(), "gone", "0.log")); err != nil || len(got) != 0 {
		t.Errorf("rotatedFiles of a missing dir = %q, %v", got, err)
	}
}
