package spdy

import (
	"bytes"
	"io"
	"net/http"
	"reflect"
	"testing"

	spdyframe "github.com/moby/spdystream/spdy"
)

// FuzzFrameReader reads whatever a server might send as frames: the
// reader never panics, and takes only frames within the limits.
func FuzzFrameReader(f *testing.F) {
	var wire bytes.Buffer
	framer, err := spdyframe.NewFramer(&wire, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, fr := range []spdyframe.Frame{
		&spdyframe.SynReplyFrame{StreamId: 1, Headers: http.Header{}},
		&spdyframe.SynReplyFrame{StreamId: 3, Headers: http.Header{"A": {"b", "c"}}},
		&spdyframe.DataFrame{StreamId: 1, Data: []byte("data")},
		&spdyframe.HeadersFrame{StreamId: 1, Headers: http.Header{"A": {"b"}}},
		&spdyframe.SettingsFrame{FlagIdValues: []spdyframe.SettingsFlagIdValue{{Id: 7, Value: 1}}},
		&spdyframe.WindowUpdateFrame{StreamId: 1, DeltaWindowSize: 1},
		&spdyframe.PingFrame{Id: 2},
		&spdyframe.SynStreamFrame{StreamId: 2, Headers: http.Header{"A": {"b"}}},
		&spdyframe.RstStreamFrame{StreamId: 1, Status: spdyframe.Cancel},
		&spdyframe.GoAwayFrame{LastGoodStreamId: 1},
	} {
		if err := framer.WriteFrame(fr); err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Clone(wire.Bytes()))
	}
	f.Add([]byte{0x80, 3, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{r: bytes.NewReader(data)}
		for range 1000 {
			h, err := fr.readHead()
			if err != nil {
				return
			}
			if !h.control {
				if _, err := io.CopyN(io.Discard, fr.r, int64(h.length)); err != nil {
					return
				}
				continue
			}
			if h.length > maxControlFrame {
				t.Fatalf("took a control frame of %d bytes", h.length)
			}
			c, err := fr.readControl(h)
			if err != nil {
				return
			}
			if len(c.headers) > maxHeaderCount {
				t.Fatalf("took %d headers", len(c.headers))
			}
			if len(fr.headers.window) > windowSize {
				t.Fatalf("a window of %d bytes", len(fr.headers.window))
			}
		}
	})
}

// FuzzHeaderBlocks sends header blocks as this side does and reads them
// as this side reads the server's: what goes in comes out, block after
// block.
func FuzzHeaderBlocks(f *testing.F) {
	f.Add("Streamtype", "stdin", "X-Other", "a\x00b", 3)
	f.Add("", "", "k", "", 1)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, n int) {
		h := http.Header{k1: {v1}, k2: {v2, v1}}
		var w headerWriter
		var r headerReader
		for i := range 1 + n%4 {
			block, err := w.appendBlock(nil, h)
			if err != nil {
				return
			}
			got, err := r.read(block)
			if err != nil {
				t.Fatalf("block %d: %v", i, err)
			}
			// NUL separates values: a value with one comes back as two.
			raw, err := encodeHeaders(h)
			if err != nil {
				t.Fatal(err)
			}
			want, err := decodeHeaders(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("block %d: %q, want %q", i, got, want)
			}
		}
	})
}
