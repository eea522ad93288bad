package containerlogs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/utils/clock"
)

// FollowPoll is how often a follow looks for what was appended to the log
// (and whether it was rotated) once it has read everything there was.
const FollowPoll = 200 * time.Millisecond

// readBufSize is the one buffer a read holds: its memory does not grow
// with the length of the log or of a line.
const readBufSize = 32 << 10

// ReadOptions are the kubelet's log query parameters, as Read applies
// them.
type ReadOptions struct {
	// Follow keeps reading what the container appends until it stops.
	Follow bool
	// Timestamps writes each line's time (RFC3339, nanoseconds) and a
	// space before it.
	Timestamps bool
	// TailLines starts this many lines before the end; < 0 reads all.
	TailLines int64
	// Since leaves out entries the runtime wrote before it; zero keeps
	// all.
	Since time.Time
	// LimitBytes stops the read once this many bytes were written; <= 0
	// sets no limit.
	LimitBytes int64
}

// Source is a container's log file.
type Source struct {
	Path string
	// Running reports whether the container still writes to the file: a
	// follow ends at the end of the file once it does not. Nil: the
	// follow lasts until ctx ends.
	Running func() bool
}

// Sinks receive the decoded output of each stream; a nil sink drops its
// stream. Both may be the same writer.
type Sinks struct {
	Stdout io.Writer
	Stderr io.Writer
	// Flush, if set, is called whenever the read has caught up with the
	// file (before a follow waits, and at the end), so that buffering
	// sinks pass on what they hold.
	Flush func() error
}

// Read writes the container's log, decoded from the CRI log format, to
// sinks, as the kubelet serves /containerLogs: it reads the current file
// only (not the rotated ones), from opts.TailLines lines before its end
// or from its start, leaves out entries before opts.Since, and with
// opts.Follow goes on with what is appended, across rotations of
// src.Path, looking every FollowPoll of clk, until the container stops or
// ctx ends. It returns nil once opts.LimitBytes are written.
//
// Memory stays bounded whatever the log holds: one buffer of 32 KiB;
// long lines (split by the runtime into partial entries, or written
// whole by a runtime configured not to split them) are streamed out as
// they are read, and the tail is found by reading backwards from the end.
func Read(ctx context.Context, clk clock.Clock, src Source, opts ReadOptions, sinks Sinks) error {
	f, err := os.Open(src.Path)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	// cur is the file read now; follow replaces it on rotation.
	cur := &f
	defer func() { _ = (*cur).Close() }()
	if opts.TailLines >= 0 {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("log file %s: %w", src.Path, err)
		}
		start, err := tailStart(f, st.Size(), opts.TailLines)
		if err != nil {
			return fmt.Errorf("tail %d lines of %s: %w", opts.TailLines, src.Path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("log file %s: %w", src.Path, err)
		}
	}
	d := newDecoder(opts, sinks)
	buf := make([]byte, readBufSize)
	err = follow(ctx, clk, src, opts.Follow, cur, d, buf)
	if errors.Is(err, errLimit) {
		return d.flush()
	}
	return err
}

// follow decodes *cur to its end and, when following, what comes after,
// reopening src.Path when it was rotated: *cur is then the new file, and
// the old one is closed.
func follow(ctx context.Context, clk clock.Clock, src Source, following bool, cur **os.File, d *decoder, buf []byte) error {
	for {
		f := *cur
		if err := d.drain(f, buf); err != nil {
			return err
		}
		if !following {
			return d.flush()
		}
		if src.Running != nil && !src.Running() {
			// What was written between the read and the check.
			if err := d.drain(f, buf); err != nil {
				return err
			}
			return d.flush()
		}
		if err := d.flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(FollowPoll):
		}
		if !rotated(f, src.Path) {
			continue
		}
		nf, err := os.Open(src.Path)
		if err != nil {
			continue // being replaced; look again
		}
		// What the old file got before it was rotated away comes first.
		err = d.drain(f, buf)
		_ = f.Close()
		*cur = nf
		d.newFile()
		if err != nil {
			return err
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
