package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// ErrNotFound marks a pod or container that the node does not have; the
// server answers 404 with the error's text.
var ErrNotFound = errors.New("not found")

// LogFile is where a container's log is and whether the container still
// writes to it.
type LogFile struct {
	Path string
	// Running reports whether the container still runs; a follow ends at
	// the end of the file once it does not.
	Running func() bool
}

// containerLogs finds containers' CRI log files.
type containerLogs interface {
	// ContainerLog returns the log file of the newest instance of a
	// container of a pod, or of the one before it when previous is set.
	// Unknown pods and containers are errors wrapping ErrNotFound.
	ContainerLog(namespace, pod, container string, previous bool) (LogFile, error)
}

// logOptions are the query parameters of /containerLogs, the kubelet's.
type logOptions struct {
	follow     bool
	timestamps bool
	// tail is the number of lines from the end; < 0 means all.
	tail  int
	since time.Time
	// limit caps the bytes written; <= 0 means no cap.
	limit int64
}

// followPoll is how often a follow looks for what was appended to the log.
const followPoll = 200 * time.Millisecond

// parseLogOptions reads the query of r; now is when sinceSeconds counts
// back from.
func parseLogOptions(r *http.Request, now time.Time) (logOptions, error) {
	q := r.URL.Query()
	o := logOptions{tail: -1}
	var err error
	boolean := func(name string) bool {
		if err != nil || !q.Has(name) {
			return false
		}
		var v bool
		v, err = strconv.ParseBool(q.Get(name))
		if err != nil {
			err = fmt.Errorf("query parameter %s: %w", name, err)
		}
		return v
	}
	integer := func(name string) int64 {
		if err != nil || !q.Has(name) {
			return -1
		}
		var v int64
		v, err = strconv.ParseInt(q.Get(name), 10, 64)
		if err == nil && v < 0 {
			err = fmt.Errorf("query parameter %s: must not be negative", name)
		}
		if err != nil {
			err = fmt.Errorf("query parameter %s: %w", name, err)
		}
		return v
	}
	o.follow, o.timestamps = boolean("follow"), boolean("timestamps")
	o.tail = int(integer("tailLines"))
	o.limit = integer("limitBytes")
	if s := integer("sinceSeconds"); s > 0 {
		o.since = now.Add(-time.Duration(s) * time.Second)
	}
	if q.Has("sinceTime") && err == nil {
		o.since, err = time.Parse(time.RFC3339, q.Get("sinceTime"))
		if err != nil {
			err = fmt.Errorf("query parameter sinceTime: %w", err)
		}
	}
	return o, err
}

// containerLog serves GET /containerLogs/{namespace}/{pod}/{container}
// as the kubelet does: the container's output, decoded from the CRI log
// format, with follow, previous, tailLines, timestamps, sinceSeconds,
// sinceTime and limitBytes.
func (s *Server) containerLog(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Logs == nil {
		http.Error(w, "container logs are not served", http.StatusNotFound)
		return
	}
	opts, err := parseLogOptions(r, s.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	previous, _ := strconv.ParseBool(r.URL.Query().Get("previous"))
	lf, err := s.cfg.Logs.ContainerLog(r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), previous)
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, err := os.Open(lf.Path)
	if err != nil {
		http.Error(w, fmt.Sprintf("open log of container %q: %v", r.PathValue("container"), err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var out io.Writer = flushWriter{w}
	if opts.limit > 0 {
		out = &limitWriter{w: out, left: opts.limit}
	}
	if err := s.writeLog(r.Context(), out, f, lf, opts); err != nil && !errors.Is(err, errLimit) && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(w, "\nerror reading the log: %v\n", err)
	}
}

// flushWriter flushes after each write, so that a follower sees lines as
// they come.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// writeLog copies the decoded log in f to w: the last opts.tail lines,
// then, when following, what is appended (across rotations of lf.Path)
// until the container stops or ctx ends, looking every followPoll of the
// server's clock. It closes f.
func (s *Server) writeLog(ctx context.Context, w io.Writer, f *os.File, lf LogFile, opts logOptions) error {
	defer func() { _ = f.Close() }()
	if opts.tail >= 0 {
		if err := seekTail(f, opts.tail); err != nil {
			return err
		}
	}
	rd := bufio.NewReaderSize(f, 64<<10)
	var partial []byte
	for {
		line, err := rd.ReadBytes('\n')
		if err == nil {
			if werr := writeLine(w, line, opts, &partial); werr != nil {
				return werr
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		// At the end: an incomplete last line is read again later.
		if len(line) > 0 {
			if _, serr := f.Seek(-int64(len(line)), io.SeekCurrent); serr != nil {
				return serr
			}
			rd.Reset(f)
		}
		if !opts.follow || (lf.Running != nil && !lf.Running()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.cfg.Clock.After(followPoll):
		}
		if rotated(f, lf.Path) {
			nf, err := os.Open(lf.Path)
			if err != nil {
				continue // being replaced; try again
			}
			// What the old file got before it was rotated away comes
			// first.
			rest, err := io.ReadAll(rd)
			if err == nil {
				_, err = crilogSink{w: w, opts: opts, partial: &partial}.Write(rest)
			}
			_ = f.Close()
			f = nf
			rd.Reset(f)
			if err != nil {
				return err
			}
		}
	}
}

// rotated reports whether path no longer names the open file (the log was
// rotated, or the container's log reopened).
func rotated(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	if err1 != nil || err2 != nil {
		return false
	}
	return !os.SameFile(a, b)
}

// crilogSink decodes whole lines written to it.
type crilogSink struct {
	w       io.Writer
	opts    logOptions
	partial *[]byte
}

func (c crilogSink) Write(p []byte) (int, error) {
	for _, line := range bytes.SplitAfter(p, []byte{'\n'}) {
		if len(line) > 0 {
			if err := writeLine(c.w, line, c.opts, c.partial); err != nil {
				return 0, err
			}
		}
	}
	return len(p), nil
}

// writeLine decodes one CRI log line, "<RFC3339Nano> <stream> <P|F> <text>",
// and writes its text; partial ("P") lines are joined with what follows.
func writeLine(w io.Writer, line []byte, opts logOptions, partial *[]byte) error {
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return nil // not a CRI line
	}
	_, rest, ok = bytes.Cut(rest, []byte{' '}) // stream
	if !ok {
		return nil
	}
	tag, text, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return nil
	}
	if !opts.since.IsZero() {
		if t, err := time.Parse(time.RFC3339Nano, string(ts)); err == nil && t.Before(opts.since) {
			return nil
		}
	}
	if bytes.Equal(tag, []byte("P")) {
		*partial = append(*partial, bytes.TrimSuffix(text, []byte{'\n'})...)
		return nil
	}
	if len(*partial) > 0 {
		text = append(*partial, text...)
		*partial = (*partial)[:0]
	}
	if opts.timestamps {
		if _, err := w.Write(append(append(ts, ' '), text...)); err != nil {
			return err
		}
		return nil
	}
	_, err := w.Write(text)
	return err
}

// seekTail positions f at the start of its last n lines.
func seekTail(f *os.File, n int) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	if n == 0 {
		_, err := f.Seek(end, io.SeekStart)
		return err
	}
	const chunk = 32 << 10
	lines := 0
	buf := make([]byte, chunk)
	for pos := end; pos > 0; {
		size := int64(chunk)
		if pos < size {
			size = pos
		}
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		for i := size - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == end-1 {
				continue
			}
			lines++
			if lines == n {
				_, err := f.Seek(pos+i+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

var errLimit = errors.New("limitBytes reached")

// limitWriter writes at most left bytes, then fails with errLimit.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.left {
		n, err := l.w.Write(p[:l.left])
		l.left -= int64(n)
		if err == nil {
			err = errLimit
		}
		return n, err
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
