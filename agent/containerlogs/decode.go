package containerlogs

import (
	"bytes"
	"errors"
	"io"
	"time"
)

// The CRI log format, one entry a line:
//
//	2016-10-06T00:17:09.669794202Z stdout P first part of a long line
//	2016-10-06T00:17:09.669794203Z stdout F rest of it
//
// A timestamp (RFC3339 with nanoseconds), the stream, a tag (P: the
// runtime split a long line and more of it follows; F: the line ends
// here; the first of ":"-separated tags counts) and the content. The
// newline ending a P entry is not the container's; an F entry's is.

// maxHeader bounds the part of an entry before its content; a line whose
// first maxHeader bytes hold no complete header is not a CRI entry and is
// skipped, as the kubelet skips lines it cannot parse.
const maxHeader = 128

// timeFormatOut is how timestamps are written: RFC3339 with nanoseconds
// and a fixed width, as the kubelet writes them.
const timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

var errLimit = errors.New("limitBytes reached")

type decodeState int

const (
	inHeader  decodeState = iota // collecting an entry's header
	inContent                    // writing (or dropping) its content
	skipping                     // dropping a line that is not a CRI entry
)

const (
	stdout = 0
	stderr = 1
)

// decoder turns CRI log bytes into the container's output, fed in pieces
// of any size: it holds at most one header, never a line.
type decoder struct {
	opts  ReadOptions
	sinks [2]io.Writer
	// flushSinks is Sinks.Flush.
	flushSinks func() error
	// left is what LimitBytes still allows; < 0: no limit.
	left  int64
	state decodeState
	// hdr holds the header read so far (cap maxHeader); spaces counts the
	// spaces in it.
	hdr    []byte
	spaces int
	// The entry being written: its stream, whether it is partial, and
	// whether its content goes out.
	stream  int
	partial bool
	write   bool
	// midLine: a partial entry of the stream was written, so its line
	// has begun (and got its timestamp).
	midLine [2]bool
	// ts is scratch space for a formatted timestamp.
	ts [48]byte
}

func newDecoder(opts ReadOptions, sinks Sinks) *decoder {
	d := &decoder{opts: opts, sinks: [2]io.Writer{sinks.Stdout, sinks.Stderr}, flushSinks: sinks.Flush, left: -1, hdr: make([]byte, 0, maxHeader)}
	if opts.LimitBytes > 0 {
		d.left = opts.LimitBytes
	}
	return d
}

// drain feeds r to its end through buf; io.EOF is not an error.
func (d *decoder) drain(r io.Reader, buf []byte) error {
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if ferr := d.feed(buf[:n]); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// flush passes on what the sinks buffer.
func (d *decoder) flush() error {
	if d.flushSinks == nil {
		return nil
	}
	return d.flushSinks()
}

// newFile starts over at an entry boundary: a file the runtime reopened
// begins with a new entry, whatever the old one ended with.
func (d *decoder) newFile() {
	d.state, d.hdr, d.spaces = inHeader, d.hdr[:0], 0
}

// feed decodes p, writing the content of the entries it completes or
// continues.
func (d *decoder) feed(p []byte) error {
	for len(p) > 0 {
		switch d.state {
		case inHeader:
			c := p[0]
			p = p[1:]
			if c == '\n' { // a line too short to be an entry
				d.newFile()
				continue
			}
			d.hdr = append(d.hdr, c)
			if c == ' ' {
				d.spaces++
				if d.spaces == 3 {
					if err := d.startEntry(); err != nil {
						return err
					}
					continue
				}
			}
			if len(d.hdr) == maxHeader {
				d.state = skipping
			}
		case inContent:
			i := bytes.IndexByte(p, '\n')
			chunk := p
			if i >= 0 {
				chunk = p[:i]
			}
			if d.write {
				if err := d.emit(chunk); err != nil {
					return err
				}
			}
			if i < 0 {
				return nil
			}
			p = p[i+1:]
			if d.write {
				d.midLine[d.stream] = d.partial
				if !d.partial {
					if err := d.emit([]byte{'\n'}); err != nil {
						return err
					}
				}
			}
			d.newFile()
		case skipping:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				return nil
			}
			p = p[i+1:]
			d.newFile()
		}
	}
	return nil
}

// startEntry parses the header in d.hdr ("<time> <stream> <tags> ") and
// decides what becomes of the entry's content.
func (d *decoder) startEntry() error {
	ts, rest, _ := bytes.Cut(d.hdr, []byte{' '})
	stream, rest, _ := bytes.Cut(rest, []byte{' '})
	tags, _, _ := bytes.Cut(rest, []byte{' '})
	tag, _, _ := bytes.Cut(tags, []byte{':'})
	d.state = inContent
	d.write = false
	switch string(stream) {
	case "stdout":
		d.stream = stdout
	case "stderr":
		d.stream = stderr
	default:
		d.state = skipping
		return nil
	}
	d.partial = string(tag) == "P"
	if d.sinks[d.stream] == nil {
		return nil
	}
	var t time.Time
	if d.opts.Timestamps || !d.opts.Since.IsZero() {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, string(ts)); err != nil {
			d.state = skipping
			return nil
		}
	}
	if !d.opts.Since.IsZero() && t.Before(d.opts.Since) {
		return nil
	}
	d.write = true
	if d.opts.Timestamps && !d.midLine[d.stream] {
		// One timestamp a line, that of its first entry.
		return d.emit(append(t.AppendFormat(d.ts[:0], timeFormatOut), ' '))
	}
	return nil
}

// emit writes p to the entry's sink, within LimitBytes; errLimit once the
// limit is reached.
func (d *decoder) emit(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	limited := d.left >= 0 && int64(len(p)) >= d.left
	if limited {
		p = p[:d.left]
	}
	n, err := d.sinks[d.stream].Write(p)
	if d.left >= 0 {
		d.left -= int64(n)
	}
	if err != nil {
		return err
	}
	if limited {
		return errLimit
	}
	return nil
}
