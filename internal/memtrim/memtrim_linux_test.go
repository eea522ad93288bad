package memtrim

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

func TestReadOnlyMappings(t *testing.T) {
	maps := []byte(`00400000-0108e000 r-xp 00000000 fe:00 9979988                            /bin/agent
0108e000-01e45000 r--p 00c8e000 fe:00 9979988                            /bin/agent
01e45000-01eeb000 rw-p 01a45000 fe:00 9979988                            /bin/agent
01eeb000-01f00000 rw-p 00000000 00:00 0
02000000-02001000 r--p 00000000 fe:01 9979988                            /other/disk/same/inode
7f0000000000-7f0000001000 r--p 00000000 fe:00 12                         /lib/x.so
`)
	got, err := readOnlyMappings(maps, unix.Mkdev(0xfe, 0), 9979988)
	if err != nil {
		t.Fatal(err)
	}
	want := []addrRange{{0x400000, 0x108e000}, {0x108e000, 0x1e45000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("readOnlyMappings = %#v, want %#v (the writable mapping, another device's file and other files left out)", got, want)
	}
	if _, err := readOnlyMappings([]byte("zz r-xp 0 fe:00 1 /bin/agent\n"), unix.Mkdev(0xfe, 0), 1); err == nil {
		t.Error("a bad address range was accepted")
	}
}

// TestPageOutGivesBackTheBinary pages out the test binary itself: its
// file-backed resident memory goes down, and the process goes on running
// the code it gave back.
func TestPageOutGivesBackTheBinary(t *testing.T) {
	res, err := PageOut()
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("this kernel has no MADV_PAGEOUT: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Mapped <= 0 {
		t.Errorf("advised %d bytes of mappings, want the binary's text and read-only data", res.Mapped)
	}
	if res.RSSFileAfter >= res.RSSFileBefore {
		t.Errorf("RssFile %d bytes before, %d after; want fewer after", res.RSSFileBefore, res.RSSFileAfter)
	}
	// What was given back runs again.
	if _, err := readOnlyMappings([]byte("00400000-0108e000 r-xp 0 fe:00 1 /x\n"), unix.Mkdev(0xfe, 0), 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("paged out %d KiB of mappings: RssFile %d -> %d KiB", res.Mapped>>10, res.RSSFileBefore>>10, res.RSSFileAfter>>10)
}

// TestLoopPasses: the first pass comes After the start, the next ones
// Every; a kernel without MADV_PAGEOUT ends the loop.
func TestLoopPasses(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	passes := make(chan struct{}, 10) // written by the loop, read here
	var fail atomic.Bool
	l := Loop{Clock: clk, After: time.Minute, Every: 10 * time.Minute, pageOut: func() (Result, error) {
		passes <- struct{}{}
		if fail.Load() {
			return Result{}, fmt.Errorf("madvise: %w", unix.EINVAL)
		}
		return Result{Mapped: 1}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	step := func(d time.Duration) {
		t.Helper()
		polltest.Until(t, 10*time.Second, "the loop waiting", func() (bool, string) { return clk.HasWaiters(), "" })
		clk.Step(d)
	}
	step(59 * time.Second)
	select {
	case <-passes:
		t.Fatal("a pass before After")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(time.Second)
	<-passes
	step(10 * time.Minute)
	<-passes
	fail.Store(true)
	step(10 * time.Minute)
	<-passes
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop went on after EINVAL")
	}
}
