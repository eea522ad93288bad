package memtrim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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
	// The mappings read what comes back a page at a time (VmFlags rr).
	if n := randomReadMappings(t); n == 0 {
		t.Error("no read-only mapping of the binary is advised MADV_RANDOM after PageOut")
	}
	t.Logf("paged out %d KiB of mappings: RssFile %d -> %d KiB", res.Mapped>>10, res.RSSFileBefore>>10, res.RSSFileAfter>>10)
}

// randomReadMappings counts the read-only mappings of the test binary
// whose VmFlags in /proc/self/smaps have rr (MADV_RANDOM).
func randomReadMappings(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	n, ours := 0, false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			ours = f[5] == exe && len(f[1]) > 1 && f[1][1] != 'w'
		case ours && len(f) > 0 && f[0] == "VmFlags:" && slices.Contains(f[1:], "rr"):
			n++
		}
	}
	return n
}

// TestPageOutUnmapsSharedPages runs a second process (this test binary)
// that maps the binary and reads every page of it, so that each page of
// this process's mappings is mapped by another process too and
// MADV_PAGEOUT leaves it: PageOut still takes the pages out of this
// process's mappings, and only what runs again comes back.
func TestPageOutUnmapsSharedPages(t *testing.T) {
	if os.Getenv(holdEnv) == "1" {
		holdTheBinary()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPageOutUnmapsSharedPages$")
	cmd.Env = append(os.Environ(), holdEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close() // the holder exits
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("the holder said %q, %v", line, err)
	}
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := readOnlyMappings(maps, exe.Dev, exe.Ino)
	if err != nil {
		t.Fatal(err)
	}
	// Every page of the binary's mappings resident here too, and shared.
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_POPULATE_READ); errno != 0 {
			t.Skipf("madvise MADV_POPULATE_READ (Linux 5.14): %v", errno)
		}
	}
	before := mappedRSS(t, ranges)
	if _, err := PageOut(); errors.Is(err, unix.EINVAL) {
		t.Skipf("this kernel has no MADV_PAGEOUT: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	after := mappedRSS(t, ranges)
	// What the test runs after PageOut is mapped back, in 64 KiB runs
	// (fault-around).
	if after*2 > before {
		t.Errorf("the binary's read-only mappings had %d KiB resident before PageOut, %d after; want most of them unmapped, though another process maps every page", before>>10, after>>10)
	}
	t.Logf("pages shared with another process: the binary's mappings %d -> %d KiB resident", before>>10, after>>10)
}

// holdEnv makes the test binary holdTheBinary.
const holdEnv = "MEMTRIM_TEST_HOLD"

// holdTheBinary maps the running binary, reads every page of it, says
// "holding" on stdout and keeps the mapping until stdin ends.
func holdTheBinary() {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		os.Exit(2)
	}
	st, err := f.Stat()
	if err != nil {
		os.Exit(2)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		os.Exit(2)
	}
	var sum byte
	for i := 0; i < len(data); i += os.Getpagesize() {
		sum += data[i]
	}
	fmt.Printf("holding\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = sum
	os.Exit(0)
}

// mappedRSS adds up the Rss of the mappings in /proc/self/smaps that
// start where one of ranges starts.
func mappedRSS(t *testing.T, ranges []addrRange) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	in := false
	for line := range strings.Lines(string(b)) {
		if lo, _, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			start, err := strconv.ParseUint(lo, 16, 64)
			in = err == nil && slices.ContainsFunc(ranges, func(r addrRange) bool { return r.start == uintptr(start) })
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			total += kb << 10
		}
	}
	return total
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

// TestLoopPassesAfterActivity: activity moves a pass to Quiet after it
// (after the latest, when it goes on), never sooner than MinGap after the
// last pass nor before the first; the periodic passes count from the
// last pass; without Every, only activity makes passes.
func TestLoopPassesAfterActivity(t *testing.T) {
	for _, every := range []time.Duration{10 * time.Minute, 0} {
		t.Run(fmt.Sprintf("every %v", every), func(t *testing.T) {
			t0 := time.Now()
			clk := clocktesting.NewFakeClock(t0)
			passes := make(chan time.Duration, 10) // written by the loop, read here
			dues := make(chan time.Time, 10)       // likewise
			act := NewActivity()
			l := Loop{Clock: clk, After: time.Minute, Every: every, Activity: act, Quiet: 30 * time.Second, MinGap: time.Minute,
				pageOut: func() (Result, error) { passes <- clk.Since(t0); return Result{Mapped: 1}, nil },
				waiting: func(due time.Time) { dues <- due }}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() { l.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			// next checks when the loop, once waiting, will pass, and
			// waits for its timer.
			next := func(want time.Duration, never bool) {
				t.Helper()
				due := <-dues
				if never != due.IsZero() || !never && due.Sub(t0) != want {
					t.Fatalf("at %v the loop waits until %v, want %v (never %v)", clk.Since(t0), due.Sub(t0), want, never)
				}
				if !never {
					polltest.Until(t, 10*time.Second, "the loop's timer", func() (bool, string) { return clk.HasWaiters(), "" })
				}
			}
			at := func(d time.Duration) { clk.SetTime(t0.Add(d)) }
			pass := func(want time.Duration) {
				t.Helper()
				if got := <-passes; got != want {
					t.Fatalf("a pass at %v, want %v", got, want)
				}
			}

			next(time.Minute, false)
			at(10 * time.Second)
			act.Note() // start-up's activity does not move the first pass
			next(time.Minute, false)
			at(time.Minute)
			pass(time.Minute)
			if every > 0 {
				next(time.Minute+every, false)
			} else {
				next(0, true)
			}
			at(70 * time.Second)
			act.Note()
			next(2*time.Minute, false) // MinGap after the last pass
			at(110 * time.Second)
			act.Note()
			next(140*time.Second, false) // Quiet after the latest
			at(140 * time.Second)
			pass(140 * time.Second)
			if every > 0 {
				next(140*time.Second+every, false)
				at(140*time.Second + every)
				pass(140*time.Second + every)
			} else {
				next(0, true)
			}
			select {
			case got := <-passes:
				t.Fatalf("an extra pass at %v", got)
			default:
			}
		})
	}
}
