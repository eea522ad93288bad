package spdy

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// A header block (SPDY/3 section 2.6.10) is a count, then each header's
// name and value after their lengths, all 4 bytes big-endian; names are
// lower case and a header's values are joined with NUL bytes. The blocks
// a side sends make one zlib stream (with the dictionary) per connection,
// flushed with a sync flush at the end of each block.

const (
	// maxHeaderCount, maxHeaderField and maxHeaderBlock bound the header
	// blocks this side takes and makes: the headers in one, the length of
	// a name or a value, and a block's whole decompressed size.
	maxHeaderCount = 1000
	maxHeaderField = 64 << 10
	maxHeaderBlock = 256 << 10
	// windowSize is deflate's window: how far back a block may refer.
	windowSize = 32 << 10
	// maxStoredBlock is the most a stored deflate block holds.
	maxStoredBlock = 1<<16 - 1
)

// errHeaderBlock marks a header block that does not decode.
var errHeaderBlock = errors.New("bad header block")

// zlibHeader starts the zlib stream of the header blocks this side sends:
// deflate with a 32 KiB window, and a dictionary (FDICT; FCHECK makes the
// two bytes a multiple of 31).
var zlibHeader = [2]byte{0x78, 0x20}

// headerWriter makes the header blocks of the frames a connection sends,
// without a compressor: the zlib stream is made of stored (uncompressed)
// deflate blocks, which any inflater takes whatever its dictionary. A
// sync flush ends each block with an empty stored block, and so does
// this: Go's compress/flate (the server's) reads the head of the block
// after a stored block before it hands that block's bytes out, and with
// no such head in the frame, the read fails for good
// (TestStoredBlockNeedsEmptyBlock). Not safe for concurrent use: the
// connection's write lock guards it.
type headerWriter struct {
	// started is set once the zlib header has been written.
	started bool
}

// appendBlock appends h's header block to dst.
func (w *headerWriter) appendBlock(dst []byte, h http.Header) ([]byte, error) {
	raw, err := encodeHeaders(h)
	if err != nil {
		return dst, err
	}
	if !w.started {
		dst = append(dst, zlibHeader[:]...)
		dst = binary.BigEndian.AppendUint32(dst, dictionaryID)
		w.started = true
	}
	for len(raw) > maxStoredBlock {
		dst = appendStored(dst, raw[:maxStoredBlock])
		raw = raw[maxStoredBlock:]
	}
	dst = appendStored(dst, raw)
	return appendStored(dst, nil), nil
}

// appendStored appends a non-final stored deflate block of p (at most
// maxStoredBlock bytes) to dst, which ends on a byte boundary: the block's
// 3 header bits (BFINAL 0, BTYPE 00) and their padding make one zero
// byte, then LEN and NLEN, little-endian.
func appendStored(dst, p []byte) []byte {
	n := uint16(len(p))
	dst = append(dst, 0)
	dst = binary.LittleEndian.AppendUint16(dst, n)
	dst = binary.LittleEndian.AppendUint16(dst, ^n)
	return append(dst, p...)
}

// encodeHeaders is h's uncompressed header block, its names in lower case
// (ASCII) and in order; names that differ only in case are merged, in the
// order of the original names.
func encodeHeaders(h http.Header) ([]byte, error) {
	keys := slices.Sorted(maps.Keys(h))
	merged := make(map[string][]string, len(h))
	for _, k := range keys {
		name := asciiLower(k)
		merged[name] = append(merged[name], h[k]...)
	}
	if len(merged) > maxHeaderCount {
		return nil, fmt.Errorf("%d headers, more than %d", len(merged), maxHeaderCount)
	}
	names := make([]string, 0, len(merged))
	for name := range merged {
		names = append(names, name)
	}
	slices.Sort(names)
	b := binary.BigEndian.AppendUint32(nil, uint32(len(names)))
	for _, name := range names {
		value := strings.Join(merged[name], "\x00")
		if name == "" || len(name) > maxHeaderField || len(value) > maxHeaderField {
			return nil, fmt.Errorf("header %q: an empty name, or a name or value longer than %d bytes", name, maxHeaderField)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
		b = append(b, name...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
		b = append(b, value...)
	}
	return b, nil
}

// asciiLower is s with its ASCII capitals made small, and nothing else
// changed (strings.ToLower would replace invalid UTF-8).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// headerReader decodes the header blocks a connection receives. It keeps
// no inflater between blocks: as every block ends with a sync flush, at a
// byte boundary, an inflater's state between two blocks is its window
// alone, which is the dictionary and the blocks so far. So each block is
// inflated by an inflater from a pool shared by every connection, primed
// with that window; what a connection keeps is the window (about 1.5 KiB
// for a remotecommand session, at most 32 KiB). Not safe for concurrent
// use: the read loop owns it.
type headerReader struct {
	// started is set once the zlib header has been read.
	started bool
	// window is what a block may refer to: the dictionary (when the
	// stream names it) and the blocks decoded so far, the last
	// windowSize bytes.
	window []byte
	src    bytes.Reader
}

// read decodes one compressed header block.
func (r *headerReader) read(block []byte) (http.Header, error) {
	if !r.started {
		rest, window, err := readZlibHeader(block)
		if err != nil {
			return nil, err
		}
		block, r.window, r.started = rest, window, true
	}
	r.src.Reset(block)
	fr := getInflater(&r.src, r.window)
	// The block ends at a block boundary with the input: the inflater
	// then asks for more and says io.ErrUnexpectedEOF.
	raw, err := io.ReadAll(io.LimitReader(fr, maxHeaderBlock+1))
	putInflater(fr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: %w", errHeaderBlock, err)
	}
	if len(raw) > maxHeaderBlock {
		return nil, fmt.Errorf("%w: more than %d bytes", errHeaderBlock, maxHeaderBlock)
	}
	h, err := decodeHeaders(raw)
	if err != nil {
		return nil, err
	}
	r.window = appendWindow(r.window, raw)
	return h, nil
}

// readZlibHeader checks the zlib header that starts the stream, and
// returns what follows and the window it starts with: the dictionary, if
// it names it (any other dictionary is an error).
func readZlibHeader(b []byte) (rest, window []byte, err error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("%w: no zlib header", errHeaderBlock)
	}
	cmf, flg := b[0], b[1]
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 {
		return nil, nil, fmt.Errorf("%w: not a zlib stream", errHeaderBlock)
	}
	b = b[2:]
	if flg&0x20 == 0 {
		return b, nil, nil
	}
	if len(b) < 4 || binary.BigEndian.Uint32(b) != dictionaryID {
		return nil, nil, fmt.Errorf("%w: the zlib stream names another dictionary", errHeaderBlock)
	}
	return b[4:], dictionary, nil
}

// appendWindow appends p to window, keeping the last windowSize bytes;
// it never writes into window's array (the dictionary's, at first).
func appendWindow(window, p []byte) []byte {
	if len(p) == 0 {
		return window
	}
	keep := max(0, len(window)+len(p)-windowSize)
	if keep >= len(window) {
		return slices.Clone(p[keep-len(window):])
	}
	return slices.Concat(window[keep:], p)
}

// decodeHeaders decodes an uncompressed header block, which it must fill.
func decodeHeaders(b []byte) (http.Header, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: truncated", errHeaderBlock)
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if n > maxHeaderCount {
		return nil, fmt.Errorf("%w: %d headers, more than %d", errHeaderBlock, n, maxHeaderCount)
	}
	field := func() (string, bool) {
		if len(b) < 4 {
			return "", false
		}
		l := binary.BigEndian.Uint32(b)
		if l > maxHeaderField || uint64(l) > uint64(len(b)-4) {
			return "", false
		}
		s := string(b[4 : 4+l])
		b = b[4+l:]
		return s, true
	}
	h := make(http.Header, min(int(n), len(b)/8))
	for range n {
		name, ok := field()
		if !ok {
			return nil, fmt.Errorf("%w: truncated", errHeaderBlock)
		}
		value, ok := field()
		if !ok {
			return nil, fmt.Errorf("%w: truncated", errHeaderBlock)
		}
		for v := range strings.SplitSeq(value, "\x00") {
			h.Add(name, v)
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the headers", errHeaderBlock, len(b))
	}
	return h, nil
}

// inflaters are idle inflaters (compress/flate readers, about 40 KiB
// each), shared by every connection: a connection takes one for a header
// block and gives it back.
var inflaters sync.Pool

// noInput is what an idle inflater reads, so that it keeps no
// connection's reader alive. Nothing reads it.
var noInput = bytes.NewReader(nil)

func getInflater(src io.Reader, window []byte) io.ReadCloser {
	if fr, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := fr.(flate.Resetter).Reset(src, window); err == nil {
			return fr
		}
	}
	return flate.NewReaderDict(src, window)
}

func putInflater(fr io.ReadCloser) {
	_ = fr.(flate.Resetter).Reset(noInput, nil)
	inflaters.Put(fr)
}
