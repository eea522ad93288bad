package spdy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// SPDY/3 frames (draft 3, section 2.2): an 8-byte head, then the payload.
// A control frame's head is the control bit, the version (15 bits), the
// type (16), the flags (8) and the payload's length (24); a data frame's
// is the stream ID (31 bits after a clear control bit), the flags and the
// length.
const (
	version = 3

	typeSynStream    = 1
	typeSynReply     = 2
	typeRstStream    = 3
	typeSettings     = 4
	typePing         = 6
	typeGoAway       = 7
	typeHeaders      = 8
	typeWindowUpdate = 9

	// flagFin ends the sender's side of a stream (data frames,
	// SYN_STREAM, SYN_REPLY, HEADERS).
	flagFin = 0x01

	// RST_STREAM statuses.
	statusProtocolError = 1
	statusRefusedStream = 3
	statusCancel        = 5

	// maxControlFrame is the largest control frame this side takes; the
	// protocol's limit (maxFrameLength) is for data frames.
	maxControlFrame = maxHeaderBlock
	maxFrameLength  = 1<<24 - 1
	maxStreamID     = 1<<31 - 1
)

// errProtocol marks a frame this side cannot take.
var errProtocol = errors.New("SPDY protocol error")

// frameHead is a frame's head.
type frameHead struct {
	control bool
	// typ is a control frame's type.
	typ uint16
	// streamID is a data frame's stream.
	streamID uint32
	flags    uint8
	length   uint32
}

// controlFrame is a control frame, decoded. Which fields a type sets:
// SYN_STREAM, SYN_REPLY and HEADERS streamID and headers; RST_STREAM
// streamID and status; PING id; GOAWAY id (the last good stream) and
// status; other types nothing.
type controlFrame struct {
	typ      uint16
	flags    uint8
	streamID uint32
	status   uint32
	id       uint32
	headers  http.Header
}

// frameReader reads the frames of a connection: heads, then either a
// control frame (readControl) or a data frame's payload, which the
// caller reads from r. Not safe for concurrent use: the read loop owns
// it.
type frameReader struct {
	r       io.Reader
	head    [8]byte
	small   [16]byte
	headers headerReader
}

// readHead reads the next frame's head.
func (fr *frameReader) readHead() (frameHead, error) {
	if _, err := io.ReadFull(fr.r, fr.head[:]); err != nil {
		return frameHead{}, err
	}
	b := fr.head[:]
	h := frameHead{flags: b[4], length: uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7])}
	first := binary.BigEndian.Uint32(b)
	if first&0x80000000 == 0 {
		h.streamID = first
		if h.streamID == 0 {
			return h, fmt.Errorf("%w: a data frame on stream 0", errProtocol)
		}
		return h, nil
	}
	h.control, h.typ = true, uint16(first)
	if v := first >> 16 & 0x7fff; v != version {
		return h, fmt.Errorf("%w: version %d, not %d", errProtocol, v, version)
	}
	if h.length > maxControlFrame {
		return h, fmt.Errorf("%w: a control frame of %d bytes, more than %d", errProtocol, h.length, maxControlFrame)
	}
	return h, nil
}

// readControl reads and decodes the payload of control frame h. Header
// blocks are decoded whatever stream they are for, as each one's
// compression refers to those before it. Unknown types are skipped, as
// the protocol asks.
func (fr *frameReader) readControl(h frameHead) (controlFrame, error) {
	var p []byte
	if int(h.length) <= len(fr.small) {
		p = fr.small[:h.length]
	} else {
		p = make([]byte, h.length)
	}
	if _, err := io.ReadFull(fr.r, p); err != nil {
		return controlFrame{}, noEOF(err)
	}
	f := controlFrame{typ: h.typ, flags: h.flags}
	need := func(n int) error {
		if len(p) < n {
			return fmt.Errorf("%w: a frame of type %d with %d bytes", errProtocol, h.typ, len(p))
		}
		return nil
	}
	u32 := func(i int) uint32 { return binary.BigEndian.Uint32(p[i:]) }
	var err error
	switch h.typ {
	case typeSynStream:
		if err = need(10); err == nil {
			f.streamID = u32(0) & maxStreamID
			f.headers, err = fr.headers.read(p[10:])
		}
	case typeSynReply, typeHeaders:
		if err = need(4); err == nil {
			f.streamID = u32(0) & maxStreamID
			f.headers, err = fr.headers.read(p[4:])
		}
	case typeRstStream:
		if err = need(8); err == nil {
			f.streamID, f.status = u32(0)&maxStreamID, u32(4)
		}
	case typePing:
		if err = need(4); err == nil {
			f.id = u32(0)
		}
	case typeGoAway:
		if err = need(4); err == nil {
			f.id = u32(0) & maxStreamID
			if len(p) >= 8 {
				f.status = u32(4)
			}
		}
	}
	return f, err
}

// noEOF is err, but io.ErrUnexpectedEOF for io.EOF: inside a frame, the
// end of the connection is not a clean one.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Frames this side writes.

func appendControlHead(b []byte, typ uint16, flags uint8, length int) []byte {
	b = binary.BigEndian.AppendUint16(b, 0x8000|version)
	b = binary.BigEndian.AppendUint16(b, typ)
	return binary.BigEndian.AppendUint32(b, uint32(flags)<<24|uint32(length))
}

func appendDataHead(b []byte, id uint32, flags uint8, length int) []byte {
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint32(b, uint32(flags)<<24|uint32(length))
}

// appendSynStream appends a SYN_STREAM of stream id, priority 0, with
// header block block.
func appendSynStream(b []byte, id uint32, block []byte) []byte {
	b = appendControlHead(b, typeSynStream, 0, 10+len(block))
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, 0) // associated stream
	b = append(b, 0, 0)                     // priority, slot
	return append(b, block...)
}

func appendRstStream(b []byte, id, status uint32) []byte {
	b = appendControlHead(b, typeRstStream, 0, 8)
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint32(b, status)
}

func appendPing(b []byte, id uint32) []byte {
	b = appendControlHead(b, typePing, 0, 4)
	return binary.BigEndian.AppendUint32(b, id)
}

// appendGoAway appends a GOAWAY that accepts no stream of the peer's
// (this side accepts none), status OK.
func appendGoAway(b []byte) []byte {
	b = appendControlHead(b, typeGoAway, 0, 8)
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint32(b, 0)
}
