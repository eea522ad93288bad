package spdy

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The dictionary is the protocol's: 1423 bytes, whose Adler-32 SPDY/3
// implementations name in their zlib streams.
func TestDictionary(t *testing.T) {
	if len(dictionary) != 1423 || dictionaryID != 0xe3c6a7c2 {
		t.Errorf("dictionary: %d bytes, Adler-32 %#x; want 1423 bytes, 0xe3c6a7c2", len(dictionary), dictionaryID)
	}
}

// The blocks headerWriter makes are one zlib stream that a standard
// inflater with the dictionary reads, block after block, as the server
// reads it: each block's bytes come out before the next block is there.
func TestHeaderWriterIsZlib(t *testing.T) {
	var w headerWriter
	blocks := []http.Header{
		{"Streamtype": {"error"}},
		{"Streamtype": {"stdin"}, "X-Many": {"a", "b", ""}},
		// More than a stored block holds.
		{"Big": {strings.Repeat("x", 40000)}, "Bigger": {strings.Repeat("y", 50000)}},
		{},
	}
	// The inflater reads from a pipe that has only the blocks written so
	// far: a block it could not finish without the next would hang.
	pr, pw := io.Pipe()
	go func() {
		for _, h := range blocks {
			b, err := w.appendBlock(nil, h)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := pw.Write(b); err != nil {
				return
			}
		}
	}()
	zr, err := zlib.NewReaderDict(pr, dictionary)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range blocks {
		raw, err := encodeHeaders(h)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(raw))
		if _, err := io.ReadFull(zr, got); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("block %d: inflated %q, want %q", i, got, raw)
		}
		back, err := decodeHeaders(got)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, canonical(h)) {
			t.Errorf("block %d: decoded %v, want %v", i, back, h)
		}
	}
	_ = pr.Close()
}

// canonical is h as a decoded block has it: canonical names, and the
// values of names that differ only in case merged.
func canonical(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		for _, v := range vs {
			out.Add(k, v)
		}
	}
	return out
}

// headerReader takes the blocks of a real compressor, as spdystream
// writes them (BestCompression, the dictionary, a sync flush after each),
// including blocks that refer back to earlier ones, though it keeps no
// inflater between blocks.
func TestHeaderReaderTakesCompressedBlocks(t *testing.T) {
	var stream bytes.Buffer
	zw, err := zlib.NewWriterLevelDict(&stream, zlib.BestCompression, dictionary)
	if err != nil {
		t.Fatal(err)
	}
	var r headerReader
	for i := range 50 {
		h := http.Header{"Streamtype": {"stdout"}, "Content-Type": {"text/plain"}, "X-Seq": {fmt.Sprint(i % 7)}}
		if i%10 == 9 {
			h.Set("X-Long", strings.Repeat(fmt.Sprint(i), 20000))
		}
		raw, err := encodeHeaders(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(raw); err != nil {
			t.Fatal(err)
		}
		if err := zw.Flush(); err != nil {
			t.Fatal(err)
		}
		got, err := r.read(bytes.Clone(stream.Bytes()))
		stream.Reset()
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("block %d: %v, want %v", i, got, h)
		}
		if len(r.window) > windowSize {
			t.Fatalf("block %d: a window of %d bytes", i, len(r.window))
		}
	}
}

// What decodeHeaders refuses.
func TestDecodeHeadersRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short count":    {0, 0},
		"too many":       {0, 0, 0x10, 0},
		"missing name":   {0, 0, 0, 1},
		"long name":      {0, 0, 0, 1, 0, 0, 0, 9, 'a'},
		"missing value":  {0, 0, 0, 1, 0, 0, 0, 1, 'a'},
		"trailing bytes": {0, 0, 0, 0, 'x'},
	} {
		if h, err := decodeHeaders(b); err == nil {
			t.Errorf("%s: decoded %v", name, h)
		}
	}
}

// A header block in a stream that names another dictionary, or is no
// zlib stream, is refused.
func TestHeaderReaderRefusesStreams(t *testing.T) {
	for name, b := range map[string][]byte{
		"not zlib":        {0x12, 0x34, 0, 0, 0, 0},
		"other dict":      {0x78, 0x20, 1, 2, 3, 4, 0, 0, 0, 0xff, 0xff},
		"garbage deflate": {0x78, 0x20, 0xe3, 0xc6, 0xa7, 0xc2, 0xff, 0xff, 0xff},
	} {
		var r headerReader
		if h, err := r.read(b); err == nil {
			t.Errorf("%s: decoded %v", name, h)
		}
	}
}

// A window keeps the last windowSize bytes.
func TestAppendWindow(t *testing.T) {
	w := appendWindow(dictionary, []byte("abc"))
	if len(w) != len(dictionary)+3 || &w[0] == &dictionary[0] {
		t.Fatalf("appendWindow wrote into the dictionary's array, or lost bytes")
	}
	zs := bytes.Repeat([]byte{'z'}, windowSize-10)
	w = appendWindow(w, zs)
	want := slices.Concat(dictionary[len(dictionary)-7:], []byte("abc"), zs)
	if !bytes.Equal(w, want) {
		t.Fatalf("window of %d bytes, starting %q; want %d bytes, starting %q", len(w), w[:10], len(want), want[:10])
	}
	big := bytes.Repeat([]byte{'q'}, 2*windowSize)
	if w = appendWindow(w, big); len(w) != windowSize || w[0] != 'q' {
		t.Fatalf("window of %d bytes, starting %q", len(w), w[:1])
	}
}
