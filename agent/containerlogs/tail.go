package containerlogs

import (
	"bytes"
	"errors"
	"io"
)

// tailStart returns the offset in a CRI log of size bytes at which its
// last n lines begin, reading backwards from the end in readBufSize
// pieces (so a tail of a huge log costs what it skips over, in time,
// never in memory).
//
// A line is what the container wrote up to a newline: one F entry and
// the P entries before it. A partial line at the end (P entries the
// runtime wrote while the line is not finished, or an entry whose newline
// is not written yet) counts as the last line. Lines that are not CRI
// entries count as lines. With n == 0 the answer is the end; with more
// lines asked than there are, the start.
func tailStart(r io.ReaderAt, size, n int64) (int64, error) {
	if n <= 0 {
		return size, nil
	}
	buf := make([]byte, readBufSize)
	hdr := make([]byte, maxHeader)
	var lines int64
	// nl is the newline after which the line being looked at would begin;
	// -1 until one is found. The entry before it ends at nl.
	nl := int64(-1)
	// ends reports whether the entry beginning at off ends a line (is not
	// a P entry); chunk holds the file from bufStart.
	var bufStart int64
	var chunk []byte
	ends := func(off int64) (bool, error) {
		var h []byte
		if rel := off - bufStart; rel >= 0 && rel+maxHeader <= int64(len(chunk)) {
			h = chunk[rel : rel+maxHeader]
		} else {
			m, err := r.ReadAt(hdr, off)
			if err != nil && !errors.Is(err, io.EOF) {
				return false, err
			}
			h = hdr[:m]
		}
		return !isPartialEntry(h), nil
	}
	// found is called for each newline at pos, from the end: the entry
	// ending at nl began just after pos. When it ends a line, that line
	// boundary (nl+1) starts the next line counted.
	found := func(pos int64) (int64, bool, error) {
		if nl >= 0 && nl+1 < size {
			full, err := ends(pos + 1)
			if err != nil {
				return 0, false, err
			}
			if full {
				lines++
				if lines == n {
					return nl + 1, true, nil
				}
			}
		}
		nl = pos
		return 0, false, nil
	}
	for end := size; end > 0; {
		bufStart = max(end-int64(len(buf)), 0)
		chunk = buf[:end-bufStart]
		if _, err := r.ReadAt(chunk, bufStart); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			if off, done, err := found(bufStart + int64(i)); err != nil || done {
				return off, err
			}
		}
		end = bufStart
	}
	// The first entry begins at the start of the file.
	if off, done, err := found(-1); err != nil || done {
		return off, err
	}
	return 0, nil
}

// isPartialEntry reports whether the line beginning with h is a CRI entry
// tagged P.
func isPartialEntry(h []byte) bool {
	_, rest, ok := bytes.Cut(h, []byte{' '})
	if !ok {
		return false
	}
	_, rest, ok = bytes.Cut(rest, []byte{' '})
	if !ok {
		return false
	}
	tags, _, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return false
	}
	tag, _, _ := bytes.Cut(tags, []byte{':'})
	return string(tag) == "P"
}
