package memtrim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Result is what one PageOut did.
type Result struct {
	// Mapped is the size of the read-only mappings of the binary that were
	// advised.
	Mapped int64
	// RSSFileBefore and RSSFileAfter are the process's file-backed
	// resident memory (RssFile) around the advice.
	RSSFileBefore, RSSFileAfter int64
}

// PageOut advises the kernel to reclaim the resident pages of the read-only
// mappings of the running executable, and to unmap those it cannot
// reclaim because another process maps them too. It returns an error wrapping
// unix.EINVAL on kernels without MADV_PAGEOUT. Safe to call at any time
// from any goroutine: the pages come back on their next use.
func PageOut() (Result, error) {
	var res Result
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return res, fmt.Errorf("stat /proc/self/exe: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return res, err
	}
	ranges, err := readOnlyMappings(maps, exe.Dev, exe.Ino)
	if err != nil {
		return res, err
	}
	if len(ranges) == 0 {
		return res, errors.New("no read-only mapping of the executable in /proc/self/maps")
	}
	res.RSSFileBefore, _ = rssFile()
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_PAGEOUT); errno != 0 {
			return res, fmt.Errorf("madvise MADV_PAGEOUT %#x-%#x: %w", r.start, r.end, errno)
		}
		// MADV_PAGEOUT leaves a page that another process maps (the
		// hollow nodes of make scale run one binary, a hundred times):
		// MADV_DONTNEED takes it out of this process's page tables, the
		// page cache keeping it for the others. The mapping is private
		// and read-only, so there is no copy of the process's own to lose.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); errno != 0 {
			return res, fmt.Errorf("madvise MADV_DONTNEED %#x-%#x: %w", r.start, r.end, errno)
		}
		// What comes back, comes back a page at a time: without
		// MADV_RANDOM each fault reads 128 KiB around the page into the
		// page cache, and fault-around maps 64 KiB of it, so that a
		// function run again brings back its neighbours too. Start-up,
		// which runs before the first pass, keeps the kernel's read-around.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_RANDOM); errno != 0 {
			return res, fmt.Errorf("madvise MADV_RANDOM %#x-%#x: %w", r.start, r.end, errno)
		}
		res.Mapped += int64(r.end - r.start)
	}
	res.RSSFileAfter, _ = rssFile()
	return res, nil
}

// addrRange is one mapping, [start, end).
type addrRange struct{ start, end uintptr }

// readOnlyMappings returns the mappings in maps (/proc/PID/maps) of the file
// with device dev and inode ino that are not writable.
func readOnlyMappings(maps []byte, dev, ino uint64) ([]addrRange, error) {
	var out []addrRange
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || len(f[1]) < 2 || f[1][1] == 'w' {
			continue
		}
		if n, err := strconv.ParseUint(f[4], 10, 64); err != nil || n != ino {
			continue
		}
		major, minor, ok := strings.Cut(f[3], ":")
		if !ok {
			continue
		}
		maj, err1 := strconv.ParseUint(major, 16, 32)
		mnr, err2 := strconv.ParseUint(minor, 16, 32)
		if err1 != nil || err2 != nil || unix.Mkdev(uint32(maj), uint32(mnr)) != dev {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("/proc/self/maps: bad address range %q", f[0])
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("/proc/self/maps: bad address range %q", f[0])
		}
		out = append(out, addrRange{uintptr(start), uintptr(end)})
	}
	return out, sc.Err()
}

// rssFile is the process's RssFile in bytes.
func rssFile() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no RssFile in /proc/self/status")
}

// Activity tells a Loop that the agent has just done work its steady state
// does not (containers started or ended). Safe for concurrent use; a nil
// *Activity notes nothing.
type Activity struct{ c chan struct{} }

// NewActivity returns an Activity for one Loop.
func NewActivity() *Activity { return &Activity{c: make(chan struct{}, 1)} }

// Note records activity now. It never blocks.
func (a *Activity) Note() {
	if a == nil {
		return
	}
	select {
	case a.c <- struct{}{}:
	default: // one pending is enough: the Loop reads the time when it takes it
	}
}

func (a *Activity) notes() <-chan struct{} {
	if a == nil {
		return nil
	}
	return a.c
}

// Loop runs PageOut After start and then Every; zero Every runs it once.
// With Activity, it also runs a pass once Quiet has gone by without any
// after activity, but never sooner than MinGap after the last pass: a
// burst of pod starts touches code (image pulls, sandbox and container
// creation, volume set-up, status patches) that the pods running then do
// not, and would keep those pages until the next periodic pass. The gap
// bounds what a churning node pays, for every pass is followed by the
// page faults (and, for pages nobody else maps, the disk reads) of what
// the agent still runs.
type Loop struct {
	Clock clock.Clock
	// After is how long after Run starts the first pass runs: once the
	// agent's start-up (the runtime reached, the sources' first pods
	// synced) is over.
	After time.Duration
	// Every is the period of the later passes.
	Every time.Duration
	// Activity, Quiet and MinGap: see Loop. No pass is moved before the
	// first one.
	Activity      *Activity
	Quiet, MinGap time.Duration
	// pageOut is PageOut; tests replace it, and set waiting, which is
	// told when the loop next passes each time it starts to wait.
	pageOut func() (Result, error)
	waiting func(due time.Time)
}

// Run pages out until ctx is done. A kernel without MADV_PAGEOUT ends it
// after one log line.
func (l Loop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pageOut := l.pageOut
	if pageOut == nil {
		pageOut = PageOut
	}
	notes := l.Activity.notes()
	// periodic is when the next periodic pass is due (zero for none),
	// last when the last pass ran (zero before the first), active when
	// the latest activity since then was noted (zero for none).
	periodic := l.Clock.Now().Add(l.After)
	var last, active time.Time
	for {
		due, why := periodic, "periodic"
		if !last.IsZero() && !active.IsZero() {
			at := active.Add(l.Quiet)
			if gap := last.Add(l.MinGap); gap.After(at) {
				at = gap
			}
			if due.IsZero() || at.Before(due) {
				due, why = at, "quiet after activity"
			}
		}
		if l.waiting != nil {
			l.waiting(due)
		}
		var fire <-chan time.Time
		var t clock.Timer
		if !due.IsZero() {
			t = l.Clock.NewTimer(due.Sub(l.Clock.Now()))
			fire = t.C()
		}
		var done, noted bool
		select {
		case <-ctx.Done():
			done = true
		case <-notes:
			noted = true
		case <-fire:
		}
		if t != nil {
			t.Stop() // a no-op once fired
		}
		if done {
			return
		}
		if noted {
			active = l.Clock.Now()
			continue
		}
		res, err := pageOut()
		if err != nil {
			logger.V(2).Info("Could not give back the binary's resident pages; RSS keeps them until memory runs short", "err", err)
			if errors.Is(err, unix.EINVAL) {
				return
			}
		} else {
			logger.V(2).Info("Gave back the binary's resident pages; what the agent still uses is read back on its next use",
				"pass", why, "mappedBytes", res.Mapped, "rssFileBefore", res.RSSFileBefore, "rssFileAfter", res.RSSFileAfter)
		}
		last, active, periodic = l.Clock.Now(), time.Time{}, time.Time{}
		if l.Every > 0 {
			periodic = last.Add(l.Every)
		} else if notes == nil {
			return
		}
	}
}
