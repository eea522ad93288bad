package spdy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"

	spdyframe "github.com/moby/spdystream/spdy"
)

// The frames this side writes are what spdystream's framer, the
// runtime's, reads.
func TestFramesReadBySpdystream(t *testing.T) {
	var hw headerWriter
	var wire bytes.Buffer
	h1 := http.Header{"Streamtype": {"error"}}
	h3 := http.Header{"Streamtype": {"stdin"}, "X-Two": {"a", "b"}}
	for _, f := range []struct {
		id uint32
		h  http.Header
	}{{1, h1}, {3, h3}} {
		block, err := hw.appendBlock(nil, f.h)
		if err != nil {
			t.Fatal(err)
		}
		wire.Write(appendSynStream(nil, f.id, block))
	}
	wire.Write(appendDataHead(nil, 3, 0, 5))
	wire.WriteString("hello")
	wire.Write(appendDataHead(nil, 3, flagFin, 0))
	wire.Write(appendRstStream(nil, 1, statusCancel))
	wire.Write(appendPing(nil, 7))
	wire.Write(appendGoAway(nil))

	framer, err := spdyframe.NewFramer(io.Discard, &wire)
	if err != nil {
		t.Fatal(err)
	}
	want := []spdyframe.Frame{
		&spdyframe.SynStreamFrame{StreamId: 1, Headers: h1},
		&spdyframe.SynStreamFrame{StreamId: 3, Headers: h3},
		&spdyframe.DataFrame{StreamId: 3, Data: []byte("hello")},
		&spdyframe.DataFrame{StreamId: 3, Flags: spdyframe.DataFlagFin, Data: []byte{}},
		&spdyframe.RstStreamFrame{StreamId: 1, Status: spdyframe.Cancel},
		&spdyframe.PingFrame{Id: 7},
		&spdyframe.GoAwayFrame{LastGoodStreamId: 0, Status: spdyframe.GoAwayOK},
	}
	for i, w := range want {
		got, err := framer.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		// Compare what the frames say, not the framer's bookkeeping.
		switch g := got.(type) {
		case *spdyframe.SynStreamFrame:
			w := w.(*spdyframe.SynStreamFrame)
			if g.StreamId != w.StreamId || g.AssociatedToStreamId != 0 || g.Priority != 0 || !reflect.DeepEqual(g.Headers, w.Headers) {
				t.Errorf("frame %d: %+v, want %+v", i, g, w)
			}
		case *spdyframe.DataFrame:
			if !reflect.DeepEqual(g, w) {
				t.Errorf("frame %d: %+v, want %+v", i, g, w)
			}
		case *spdyframe.RstStreamFrame:
			w := w.(*spdyframe.RstStreamFrame)
			if g.StreamId != w.StreamId || g.Status != w.Status {
				t.Errorf("frame %d: %+v, want %+v", i, g, w)
			}
		case *spdyframe.PingFrame:
			if g.Id != w.(*spdyframe.PingFrame).Id {
				t.Errorf("frame %d: %+v, want %+v", i, g, w)
			}
		case *spdyframe.GoAwayFrame:
			w := w.(*spdyframe.GoAwayFrame)
			if g.LastGoodStreamId != w.LastGoodStreamId || g.Status != w.Status {
				t.Errorf("frame %d: %+v, want %+v", i, g, w)
			}
		default:
			t.Errorf("frame %d: %T, want %T", i, got, w)
		}
	}
	if wire.Len() != 0 {
		t.Errorf("%d bytes left unread", wire.Len())
	}
}

// The frames spdystream's framer writes are what this side reads.
func TestFramesFromSpdystream(t *testing.T) {
	var wire bytes.Buffer
	framer, err := spdyframe.NewFramer(&wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	reply := http.Header{"X-Reply": {"yes", "no"}}
	frames := []spdyframe.Frame{
		&spdyframe.SynReplyFrame{StreamId: 1, Headers: http.Header{}},
		&spdyframe.SynReplyFrame{StreamId: 3, Headers: reply, CFHeader: spdyframe.ControlFrameHeader{Flags: spdyframe.ControlFlagFin}},
		&spdyframe.DataFrame{StreamId: 1, Data: []byte("out")},
		&spdyframe.HeadersFrame{StreamId: 1, Headers: reply},
		&spdyframe.SettingsFrame{FlagIdValues: []spdyframe.SettingsFlagIdValue{{Id: spdyframe.SettingsInitialWindowSize, Value: 1 << 16}}},
		&spdyframe.WindowUpdateFrame{StreamId: 1, DeltaWindowSize: 100},
		&spdyframe.PingFrame{Id: 2},
		&spdyframe.SynStreamFrame{StreamId: 2, Headers: reply},
		&spdyframe.RstStreamFrame{StreamId: 1, Status: spdyframe.Cancel},
		&spdyframe.GoAwayFrame{LastGoodStreamId: 0, Status: spdyframe.GoAwayOK},
	}
	for _, f := range frames {
		if err := framer.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	fr := frameReader{r: &wire}
	want := []controlFrame{
		{typ: typeSynReply, streamID: 1, headers: http.Header{}},
		{typ: typeSynReply, flags: flagFin, streamID: 3, headers: reply},
		{}, // data
		{typ: typeHeaders, streamID: 1, headers: reply},
		{typ: typeSettings},
		{typ: typeWindowUpdate},
		{typ: typePing, id: 2},
		{typ: typeSynStream, streamID: 2, headers: reply},
		{typ: typeRstStream, streamID: 1, status: statusCancel},
		{typ: typeGoAway},
	}
	for i, w := range want {
		h, err := fr.readHead()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !h.control {
			data := make([]byte, h.length)
			if _, err := io.ReadFull(fr.r, data); err != nil || h.streamID != 1 || string(data) != "out" {
				t.Fatalf("frame %d: data frame %+v %q, %v", i, h, data, err)
			}
			continue
		}
		got, err := fr.readControl(h)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("frame %d: %+v, want %+v", i, got, w)
		}
	}
	if _, err := fr.readHead(); !errors.Is(err, io.EOF) {
		t.Errorf("after the frames: %v, want EOF", err)
	}
}

// Why headerWriter ends each block with an empty stored block: without
// it, Go's inflater (the server's) reads past a stored block's end for
// the next block's head before it hands the bytes out; at the end of the
// frame that read fails, and the failure sticks: the server's framer
// takes the first block, and fails on the next.
func TestStoredBlockNeedsEmptyBlock(t *testing.T) {
	raw, err := encodeHeaders(http.Header{"Streamtype": {"error"}})
	if err != nil {
		t.Fatal(err)
	}
	first := binary.BigEndian.AppendUint32(zlibHeader[:], dictionaryID)
	wire := appendSynStream(nil, 1, appendStored(first, raw))
	wire = appendSynStream(wire, 3, appendStored(nil, raw))
	framer, err := spdyframe.NewFramer(io.Discard, bytes.NewReader(wire))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := framer.ReadFrame(); err != nil {
		t.Fatalf("first block: %v", err)
	}
	if f, err := framer.ReadFrame(); err == nil {
		t.Errorf("spdystream read %+v after a block without the empty block; the comment on headerWriter is out of date", f)
	}
}
