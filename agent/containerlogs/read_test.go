package containerlogs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// sampleLog has both streams, a line split into partial entries, an
// entry that is not CRI, and times a second apart from 10:00:00.
const sampleLog = `2026-11-21T10:00:00.000000001Z stdout F one
2026-11-21T10:00:01Z stderr P tw
2026-11-21T10:00:01.5Z stderr F o
not a CRI line
2026-11-21T10:00:02Z stdout F three
2026-11-21T10:00:03Z stdout P fo
2026-11-21T10:00:03.5Z stderr F err
2026-11-21T10:00:04+02:00 stdout F:x ur
`

func writeLog(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, path string, opts ReadOptions, streams string) string {
	t.Helper()
	var out bytes.Buffer
	sinks := Sinks{Stdout: &out, Stderr: &out}
	switch streams {
	case "stdout":
		sinks.Stderr = nil
	case "stderr":
		sinks.Stdout = nil
	}
	clk := clocktesting.NewFakeClock(time.Now())
	if err := Read(context.Background(), clk, Source{Path: path}, opts, sinks); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return out.String()
}

func TestReadOptions(t *testing.T) {
	path := writeLog(t, sampleLog)
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	all := ReadOptions{TailLines: -1}
	tests := []struct {
		name    string
		opts    ReadOptions
		streams string
		want    string
	}{
		{"all", all, "", "one\ntwo\nthree\nfoerr\nur\n"},
		{"stdout only", all, "stdout", "one\nthree\nfour\n"},
		{"stderr only", all, "stderr", "two\nerr\n"},
		{"tail 1", ReadOptions{TailLines: 1}, "", "ur\n"},
		// The tail counts lines, not entries: the split "two" is one line.
		// Lines are counted in the order the runtime wrote their ends.
		{"tail 2", ReadOptions{TailLines: 2}, "", "foerr\nur\n"},
		{"tail 3", ReadOptions{TailLines: 3}, "", "three\nfoerr\nur\n"},
		{"tail 5", ReadOptions{TailLines: 5}, "", "two\nthree\nfoerr\nur\n"},
		{"tail 6 counts the line that is not CRI", ReadOptions{TailLines: 6}, "", "one\ntwo\nthree\nfoerr\nur\n"},
		{"tail more than there is", ReadOptions{TailLines: 100}, "", "one\ntwo\nthree\nfoerr\nur\n"},
		{"tail 0", ReadOptions{TailLines: 0}, "", ""},
		{"timestamps", ReadOptions{TailLines: 2, Timestamps: true}, "",
			"2026-11-21T10:00:03.000000000Z fo2026-11-21T10:00:03.500000000Z err\nur\n"},
		{"timestamps once a line", ReadOptions{TailLines: -1, Timestamps: true}, "stdout",
			"2026-11-21T10:00:00.000000001Z one\n2026-11-21T10:00:02.000000000Z three\n2026-11-21T10:00:03.000000000Z four\n"},
		{"timestamps keep the zone", ReadOptions{TailLines: 1, Timestamps: true}, "", "2026-11-21T10:00:04.000000000+02:00 ur\n"},
		{"since", ReadOptions{TailLines: -1, Since: at("2026-11-21T10:00:01.5Z")}, "", "o\nthree\nfoerr\n"},
		{"since with zone", ReadOptions{TailLines: -1, Since: at("2026-11-21T12:00:03+02:00")}, "", "foerr\n"},
		{"limit", ReadOptions{TailLines: -1, LimitBytes: 6}, "", "one\ntw"},
		{"limit over everything", ReadOptions{TailLines: -1, LimitBytes: 1000}, "", "one\ntwo\nthree\nfoerr\nur\n"},
		{"limit with timestamps", ReadOptions{TailLines: 1, Timestamps: true, LimitBytes: 10}, "", "2026-11-21"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readAll(t, path, tt.opts, tt.streams); got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestTailStart(t *testing.T) {
	tests := []struct {
		name, log string
		n         int64
		want      string // what follows the offset
	}{
		{"empty", "", 3, ""},
		{"no newline at the end", "t stdout F a\nt stdout F b", 1, "t stdout F b"},
		{"unfinished line counts", "t stdout F a\nt stdout P b\nt stdout P c\n", 1, "t stdout P b\nt stdout P c\n"},
		{"unfinished line and one more", "t stdout F a\nt stdout P b\nt stdout P c\n", 2, "t stdout F a\nt stdout P b\nt stdout P c\n"},
		{"partial entries join", "t stdout P a\nt stdout F b\nt stdout F c\n", 2, "t stdout P a\nt stdout F b\nt stdout F c\n"},
		{"last only", "t stdout P a\nt stdout F b\nt stdout F c\n", 1, "t stdout F c\n"},
		{"not CRI lines count", "x\ny\nz\n", 2, "y\nz\n"},
		{"empty lines count", "\n\n\n", 1, "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := strings.NewReader(tt.log)
			off, err := tailStart(r, int64(len(tt.log)), tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.log[off:]; got != tt.want {
				t.Errorf("tail %d: %q; want %q", tt.n, got, tt.want)
			}
		})
	}
	// Lines longer than the read buffer, and headers across its edges.
	var b strings.Builder
	var lines []string
	for i := range 200 {
		line := fmt.Sprintf("2026-11-21T10:00:00Z stdout F %d %s\n", i, strings.Repeat("x", i*397))
		lines = append(lines, line)
		b.WriteString(line)
	}
	log := b.String()
	for _, n := range []int64{1, 2, 57, 199, 200} {
		off, err := tailStart(strings.NewReader(log), int64(len(log)), n)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Join(lines[200-n:], ""); log[off:] != want {
			t.Errorf("tail %d of long lines: starts at %d, want %d", n, off, len(log)-len(want))
		}
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r    io.ReaderAt
	read atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read.Add(int64(n))
	return n, err
}

// A tail reads from the end: the lines it skips are never read.
func TestTailReadsFromTheEnd(t *testing.T) {
	const size = 64 << 20
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("2026-11-21T10:00:00.000000000Z stdout F " + strings.Repeat("y", 200) + "\n")
	for written := 0; written < size; written += len(line) {
		if _, err := f.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := f.Stat()
	cr := &countingReaderAt{r: f}
	off, err := tailStart(cr, st.Size(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := st.Size() - 10*int64(len(line)); off != want {
		t.Errorf("tail 10 starts at %d, want %d", off, want)
	}
	if got := cr.read.Load(); got > 2*readBufSize {
		t.Errorf("tail 10 of a %d-byte log read %d bytes", st.Size(), got)
	}
	_ = f.Close()

	out := &countingWriter{}
	alloc := allocated(func() {
		clk := clocktesting.NewFakeClock(time.Now())
		if err := Read(context.Background(), clk, Source{Path: path}, ReadOptions{TailLines: 1000}, Sinks{Stdout: out}); err != nil {
			t.Error(err)
		}
	})
	if want := int64(1000 * 201); out.n != want {
		t.Errorf("tail 1000 wrote %d bytes, want %d", out.n, want)
	}
	if alloc > 1<<20 {
		t.Errorf("tail 1000 of a %d MiB log allocated %d bytes", size>>20, alloc)
	}
}

// countingWriter discards what it is given and counts it; it remembers
// the first and last bytes.
type countingWriter struct {
	n           int64
	first, last byte
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		if c.n == 0 {
			c.first = p[0]
		}
		c.last = p[len(p)-1]
	}
	c.n += int64(len(p))
	return len(p), nil
}

// allocated runs f and returns how many bytes the Go heap allocated
// meanwhile (all goroutines).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// writeLongLine writes a CRI log of one line of size bytes of 'a',
// split into partial entries of split bytes (0: one entry, as a runtime
// configured with max_container_log_line_size -1 writes it).
func writeLongLine(t *testing.T, size, split int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if split == 0 {
		split = size
	}
	chunk := bytes.Repeat([]byte{'a'}, split)
	for left := size; left > 0; left -= split {
		tag := "P"
		if left <= split {
			tag, chunk = "F", chunk[:left]
		}
		if _, err := fmt.Fprintf(f, "2026-11-21T10:00:00.000000000Z stdout %s ", tag); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte{'\n'}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A line of 200 MiB with no newline is streamed in bounded memory,
// whether the runtime split it into 16 KiB partial entries (containerd's
// default) or wrote it as one entry (max_container_log_line_size -1),
// with and without timestamps, whole and as a tail.
func TestLongLineBoundedMemory(t *testing.T) {
	const size = 200 << 20
	for _, split := range []int{16 << 10, 0} {
		path := writeLongLine(t, size, split)
		for name, opts := range map[string]ReadOptions{"whole": {TailLines: -1}, "tail 1 with timestamps": {TailLines: 1, Timestamps: true}} {
			t.Run(fmt.Sprintf("split %d, %s", split, name), func(t *testing.T) {
				out := &countingWriter{}
				alloc := allocated(func() {
					clk := clocktesting.NewFakeClock(time.Now())
					if err := Read(context.Background(), clk, Source{Path: path}, opts, Sinks{Stdout: out}); err != nil {
						t.Error(err)
					}
				})
				want := int64(size + 1)
				if opts.Timestamps {
					want += int64(len("2026-11-21T10:00:00.000000000Z "))
				}
				if out.n != want || out.last != '\n' {
					t.Errorf("wrote %d bytes ending in %q, want %d ending in a newline", out.n, out.last, want)
				}
				t.Logf("allocated %d bytes", alloc)
				// The read buffer and small change; a reader that holds a
				// line would allocate at least its 200 MiB.
				if alloc > 1<<20 {
					t.Errorf("reading a %d MiB line allocated %d bytes", size>>20, alloc)
				}
			})
		}
	}
}

// Rotated files (<log>.<timestamp>, gzipped or not) are not read, as the
// kubelet reads only the current file.
func TestReadIgnoresRotatedFiles(t *testing.T) {
	path := writeLog(t, "2026-11-21T10:00:05Z stdout F current\n")
	if err := os.WriteFile(path+".20261121-100004", []byte("2026-11-21T10:00:04Z stdout F rotated\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, path, ReadOptions{TailLines: -1}, ""); got != "current\n" {
		t.Errorf("got %q", got)
	}
}

// A follow streams an entry as it is written, even before its newline,
// goes on across a rotation, and ends once the container stops.
func TestFollow(t *testing.T) {
	path := writeLog(t, "2026-11-21T10:00:00Z stdout F one\n2026-11-21T10:00:01Z stdout F two\n")
	clk := clocktesting.NewFakeClock(time.Now())
	var running atomic.Bool
	running.Store(true)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		err := Read(ctx, clk, Source{Path: path, Running: running.Load}, ReadOptions{Follow: true, TailLines: 1}, Sinks{Stdout: pw, Stderr: pw})
		_ = pw.CloseWithError(err)
		done <- err
	}()
	got := make(chan string, 16)
	go func() {
		b := make([]byte, 1024)
		for {
			n, err := pr.Read(b)
			if n > 0 {
				got <- string(b[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	var all strings.Builder
	expect := func(want string) {
		t.Helper()
		for !strings.HasSuffix(all.String(), want) {
			select {
			case s, ok := <-got:
				if !ok {
					t.Fatalf("stream ended with %q; want %q", all.String(), want)
				}
				all.WriteString(s)
			case <-time.After(time.Millisecond):
				if clk.HasWaiters() {
					clk.Step(FollowPoll)
				}
			case <-ctx.Done():
				t.Fatalf("got %q; want it to end with %q", all.String(), want)
			}
		}
	}
	appendTo := func(p, s string) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	expect("two\n")
	appendTo(path, "2026-11-21T10:00:02Z stdout F thr")
	expect("two\nthr") // before its newline is written
	appendTo(path, "ee\n2026-11-21T10:00:03Z stdout P fo")
	expect("three\nfo")
	appendTo(path, "\n2026-11-21T10:00:03Z stdout F ur\n")
	expect("three\nfour\n")
	appendTo(path, "2026-11-21T10:00:04Z stdout F five\n")
	if err := os.Rename(path, path+".20261121-100004"); err != nil {
		t.Fatal(err)
	}
	appendTo(path, "2026-11-21T10:00:05Z stdout F six\n")
	expect("four\nfive\nsix\n")
	// A container's last words are written before it stops; the follow
	// reads them even when it learns of the stop at once.
	appendTo(path, "2026-11-21T10:00:06Z stdout F last words\n")
	running.Store(false)
	for {
		select {
		case s, ok := <-got:
			if !ok {
				if err := <-done; err != nil {
					t.Fatalf("Read: %v", err)
				}
				if !strings.HasSuffix(all.String(), "six\nlast words\n") {
					t.Errorf("stream %q", all.String())
				}
				return
			}
			all.WriteString(s)
		case <-time.After(time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(FollowPoll)
			}
		case <-ctx.Done():
			t.Fatal("the follow did not end after the container stopped")
		}
	}
}

// A follow with a byte limit ends when the limit is reached.
func TestFollowLimit(t *testing.T) {
	path := writeLog(t, "2026-11-21T10:00:00Z stdout F one\n")
	clk := clocktesting.NewFakeClock(time.Now())
	var out bytes.Buffer
	err := Read(context.Background(), clk, Source{Path: path, Running: func() bool { return true }}, ReadOptions{Follow: true, TailLines: -1, LimitBytes: 3}, Sinks{Stdout: &out})
	if err != nil || out.String() != "one" {
		t.Errorf("Read: %v, %q", err, out.String())
	}
}

func TestReadMissingFile(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	err := Read(context.Background(), clk, Source{Path: filepath.Join(t.TempDir(), "gone.log")}, ReadOptions{TailLines: -1}, Sinks{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "gone.log") {
		t.Errorf("Read of a missing file: %v", err)
	}
}
