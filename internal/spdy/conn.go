package spdy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/clock"
)

const (
	// replyTimeout bounds the wait for the server's SYN_REPLY, as
	// client-go's SPDY connection bounds it.
	replyTimeout = 30 * time.Second
	// closeTimeout bounds Close's last frames to a server that does not
	// read.
	closeTimeout = 2 * time.Second
	// maxQueuedControl bounds the frames the read loop has to answer
	// (pings, refusals) and has not yet written: a peer that floods more
	// is cut off.
	maxQueuedControl = 16 << 10
)

// ErrConnectionLost is what a stream's reads return, once what it holds
// has been read, when the connection ended before the stream did and the
// server did not say it was going away: a runtime that died or a network
// that broke, rather than the end of a session.
var ErrConnectionLost = errors.New("spdy: the connection to the server was lost")

var (
	errConnClosed = errors.New("spdy: connection closed")
	errGoneAway   = errors.New("spdy: the server is going away and takes no new streams")
)

// Config is what a connection is made with. The zero value works.
type Config struct {
	// PingPeriod, when not zero, is how often the connection pings the
	// server, which keeps an idle connection through idle timeouts.
	PingPeriod time.Duration
	// Clock times the pings, the idle timeout and the wait for replies;
	// nil is the real clock.
	Clock clock.WithDelayedExecution
	// Logger gets what the connection has to say (V(4)): why it ended.
	Logger klog.Logger
}

// Conn is the client side of a SPDY/3.1 connection, as the runtime's
// streaming server (moby/spdystream) speaks it: streams this side opens,
// no server push, no flow control (spdystream has none either), header
// blocks sent uncompressed in a zlib stream. It is an
// httpstream.Connection, for client-go's remotecommand and portforward.
//
// One goroutine, the read loop, reads the connection and hands each
// stream its data; when a stream holds streamBuffer bytes nobody has read,
// the read loop waits, and the server with it (TCP back-pressure). The
// read loop never writes: the frames it must answer are written by a
// goroutine started when there are some. The methods are safe for
// concurrent use.
type Conn struct {
	conn   net.Conn
	clock  clock.WithDelayedExecution
	logger klog.Logger
	period time.Duration

	// in is the read loop's.
	in frameReader

	// wmu is held while a frame is written, and while a stream's ID is
	// chosen and its SYN_STREAM written (IDs go up on the wire). Taken
	// before mu, never after.
	wmu sync.Mutex
	// hw and werr are guarded by wmu; werr is the first write that failed,
	// which fails every later one.
	hw   headerWriter
	werr error

	// lastActive is when a frame was last read or written, as
	// UnixNano of clock.
	lastActive atomic.Int64
	// pongs counts the answers to this side's pings.
	pongs atomic.Int64

	mu sync.Mutex
	// The fields below are guarded by mu.
	streams map[uint32]*Stream
	nextID  uint32
	// goneAway is set when the server said it goes away; closing when
	// Close was called; ended when the read loop has.
	goneAway, closing, ended bool
	// pings are the pings of Ping waiting for their answer, by ID.
	pings    map[uint32]chan struct{}
	nextPing uint32
	// control holds frames the read loop has to send; writingControl is
	// set while a goroutine writes them.
	control        []byte
	writingControl bool
	idleTimeout    time.Duration
	idleTimer      clock.Timer
	pingTimer      clock.Timer

	// done is closed when the read loop has ended (CloseChan).
	done chan bool
}

var _ httpstream.Connection = (*Conn)(nil)

// NewConn starts the client side of SPDY on conn, which the server has
// just switched to it; buffered is what was read from conn past the
// server's answer. The connection owns conn from now on: Close, or the
// server's end, closes it.
func NewConn(conn net.Conn, buffered []byte, cfg Config) *Conn {
	c := &Conn{
		conn:     conn,
		clock:    cfg.Clock,
		logger:   cfg.Logger,
		period:   cfg.PingPeriod,
		streams:  make(map[uint32]*Stream),
		nextID:   1,
		nextPing: 1,
		done:     make(chan bool),
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.in.r = conn
	if len(buffered) > 0 {
		c.in.r = &prefixReader{prefix: buffered, r: conn}
	}
	c.touch()
	if c.period > 0 {
		c.pingTimer = c.clock.AfterFunc(c.period, c.goPing)
	}
	go c.readLoop()
	return c
}

// CreateStream opens a stream with headers and waits for the server to
// accept it (or to refuse it, or for replyTimeout).
func (c *Conn) CreateStream(headers http.Header) (httpstream.Stream, error) {
	s, err := c.openStream(headers)
	if err != nil {
		return nil, err
	}
	timer := c.clock.NewTimer(replyTimeout)
	defer timer.Stop()
	select {
	case <-s.replied:
		if err := s.replyError(); err != nil {
			return nil, err
		}
		return s, nil
	case <-timer.C():
		_ = s.Reset()
		return nil, fmt.Errorf("spdy: the server did not accept stream %d within %s", s.id, replyTimeout)
	case <-c.done:
		if s.replyError() == nil && isClosed(s.replied) {
			return s, nil
		}
		return nil, fmt.Errorf("spdy: stream %d: %w", s.id, c.endError())
	}
}

// openStream chooses the next stream ID and sends the stream's
// SYN_STREAM.
func (c *Conn) openStream(headers http.Header) (*Stream, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	switch {
	case c.closing || c.ended:
		c.mu.Unlock()
		return nil, errConnClosed
	case c.goneAway:
		c.mu.Unlock()
		return nil, errGoneAway
	case c.nextID > maxStreamID:
		c.mu.Unlock()
		return nil, errors.New("spdy: no stream IDs left on this connection")
	}
	s := newStream(c, c.nextID, headers)
	c.nextID += 2
	c.streams[s.id] = s
	c.mu.Unlock()
	block, err := c.hw.appendBlock(nil, headers)
	if err == nil {
		err = c.writeLocked(appendSynStream(nil, s.id, block))
	}
	if err != nil {
		c.remove(s)
		return nil, fmt.Errorf("spdy: open a stream: %w", err)
	}
	return s, nil
}

// Close resets the streams that are still open, tells the server this
// side goes away and closes the connection. Later calls do nothing.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	streams := c.endLocked()
	ended := c.ended
	c.mu.Unlock()
	var last []byte
	for _, s := range streams {
		if s.abort() {
			last = appendRstStream(last, s.id, statusCancel)
		}
	}
	if !ended {
		last = appendGoAway(last)
		// A write stuck on a server that does not read would hold the
		// write lock, and Close with it. The deadline is the socket's:
		// wall time, whatever the clock.
		_ = c.conn.SetWriteDeadline(time.Now().Add(closeTimeout))
		_ = c.write(last)
	}
	err := c.conn.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// CloseChan is closed when the connection has ended, by either side.
func (c *Conn) CloseChan() <-chan bool {
	return c.done
}

// SetIdleTimeout has the connection closed when no frame has gone either
// way for timeout; zero turns that off.
func (c *Conn) SetIdleTimeout(timeout time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idleTimer != nil {
		c.idleTimer.Stop()
		c.idleTimer = nil
	}
	c.idleTimeout = timeout
	if timeout > 0 && !c.closing && !c.ended {
		c.idleTimer = c.clock.AfterFunc(timeout, c.goCheckIdle)
	}
}

// RemoveStreams does nothing: a stream leaves the connection by itself
// once it has ended both ways or been reset, and Close resets only those
// that have not (client-go's callers remove streams they have reset).
func (c *Conn) RemoveStreams(...httpstream.Stream) {}

// Ping pings the server and returns the time its answer took.
func (c *Conn) Ping(ctx context.Context) (time.Duration, error) {
	c.mu.Lock()
	if c.closing || c.ended {
		c.mu.Unlock()
		return 0, errConnClosed
	}
	id := c.nextPingIDLocked()
	answered := make(chan struct{}) // closed by the read loop
	c.pings[id] = answered
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pings, id)
		c.mu.Unlock()
	}()
	start := c.clock.Now()
	if err := c.write(appendPing(nil, id)); err != nil {
		return 0, err
	}
	select {
	case <-answered:
		return c.clock.Since(start), nil
	case <-c.done:
		return 0, c.endError()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// nextPingIDLocked is the ID of this side's next ping: odd, as a client's
// are.
func (c *Conn) nextPingIDLocked() uint32 {
	if c.pings == nil {
		c.pings = make(map[uint32]chan struct{})
	}
	id := c.nextPing
	c.nextPing += 2
	if c.nextPing > maxStreamID {
		c.nextPing = 1
	}
	return id
}

// goPing and goCheckIdle are the timers' functions: a fake clock calls
// them with its lock held, which they would need.
func (c *Conn) goPing()      { go c.periodicPing() }
func (c *Conn) goCheckIdle() { go c.checkIdle() }

// periodicPing sends a ping and sets the timer for the next one. The
// answer only counts in pongs: the ping is for the idle timeouts on the
// way.
func (c *Conn) periodicPing() {
	c.mu.Lock()
	if c.closing || c.ended {
		c.mu.Unlock()
		return
	}
	id := c.nextPingIDLocked()
	c.mu.Unlock()
	if err := c.write(appendPing(nil, id)); err != nil {
		return
	}
	c.mu.Lock()
	if !c.closing && !c.ended {
		c.pingTimer = c.clock.AfterFunc(c.period, c.goPing)
	}
	c.mu.Unlock()
}

// checkIdle closes the connection when it has been idle for the idle
// timeout, and otherwise sets the timer for when it will have been.
func (c *Conn) checkIdle() {
	c.mu.Lock()
	timeout := c.idleTimeout
	if timeout <= 0 || c.closing || c.ended {
		c.mu.Unlock()
		return
	}
	idle := c.clock.Since(time.Unix(0, c.lastActive.Load()))
	if idle < timeout {
		c.idleTimer = c.clock.AfterFunc(timeout-idle, c.goCheckIdle)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.logger.V(4).Info("Closing an idle SPDY connection", "idle", idle)
	_ = c.Close()
}

// endLocked takes the connection's streams out of it, for the caller to
// end, and stops its timers: what Close and the end of the read loop
// both do first. c.mu must be held.
func (c *Conn) endLocked() []*Stream {
	streams := make([]*Stream, 0, len(c.streams))
	for _, s := range c.streams {
		streams = append(streams, s)
	}
	clear(c.streams)
	for _, t := range []clock.Timer{c.idleTimer, c.pingTimer} {
		if t != nil {
			t.Stop()
		}
	}
	c.idleTimer, c.pingTimer = nil, nil
	return streams
}

func (c *Conn) touch() {
	c.lastActive.Store(c.clock.Now().UnixNano())
}

// write writes a whole frame, or several.
func (c *Conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(b)
}

func (c *Conn) writeLocked(bufs ...[]byte) error {
	if c.werr != nil {
		return c.werr
	}
	nb := net.Buffers(bufs)
	if _, err := nb.WriteTo(c.conn); err != nil {
		// A frame cut short leaves the stream of frames broken.
		c.werr = fmt.Errorf("spdy: write: %w", err)
		_ = c.conn.Close()
		return c.werr
	}
	c.touch()
	return nil
}

// writeData writes a data frame of stream id.
func (c *Conn) writeData(id uint32, fin bool, p []byte) error {
	var flags uint8
	if fin {
		flags = flagFin
	}
	var head [8]byte
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(appendDataHead(head[:0], id, flags, len(p)), p)
}

// queueControl has frame b written by a goroutine of its own, so that the
// read loop never waits on a write (the server may be waiting on this
// side's reads to read again).
func (c *Conn) queueControl(b []byte) {
	c.mu.Lock()
	if len(c.control)+len(b) > maxQueuedControl {
		c.mu.Unlock()
		c.logger.V(4).Info("SPDY server floods control frames: closing", "queued", len(c.control))
		_ = c.conn.Close()
		return
	}
	c.control = append(c.control, b...)
	start := !c.writingControl
	c.writingControl = true
	c.mu.Unlock()
	if start {
		go c.writeControl()
	}
}

func (c *Conn) writeControl() {
	for {
		c.mu.Lock()
		b := c.control
		c.control = nil
		if len(b) == 0 {
			c.writingControl = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if err := c.write(b); err != nil {
			c.mu.Lock()
			c.control, c.writingControl = nil, false
			c.mu.Unlock()
			return
		}
	}
}

// stream returns the open stream id, or nil.
func (c *Conn) stream(id uint32) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// remove forgets stream s, which is done.
func (c *Conn) remove(s *Stream) {
	c.mu.Lock()
	if c.streams[s.id] == s {
		delete(c.streams, s.id)
	}
	c.mu.Unlock()
}

// readLoop reads frames until the connection ends, then ends what is
// left.
func (c *Conn) readLoop() {
	err := c.serve()
	c.mu.Lock()
	c.ended = true
	streams := c.endLocked()
	lost := !c.closing && !c.goneAway
	c.mu.Unlock()
	var cause error
	if lost {
		cause = ErrConnectionLost
		if !errors.Is(err, io.EOF) {
			cause = fmt.Errorf("%w: %w", ErrConnectionLost, err)
		}
		c.logger.V(4).Info("SPDY connection lost", "err", err, "openStreams", len(streams))
	}
	for _, s := range streams {
		s.connEnded(cause)
	}
	_ = c.conn.Close()
	close(c.done)
}

// endError says why the connection ended.
func (c *Conn) endError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.goneAway {
		return errConnClosed
	}
	return ErrConnectionLost
}

// serve reads and handles frames until the connection ends (io.EOF),
// breaks, or breaks the protocol.
func (c *Conn) serve() error {
	for {
		h, err := c.in.readHead()
		if err != nil {
			return err
		}
		c.touch()
		if !h.control {
			if err := c.receiveData(h); err != nil {
				return err
			}
			continue
		}
		f, err := c.in.readControl(h)
		if err != nil {
			return err
		}
		c.handleControl(f)
	}
}

// receiveData hands a data frame's payload to its stream; the payload of
// a stream that is gone or unknown is dropped.
func (c *Conn) receiveData(h frameHead) error {
	fin := h.flags&flagFin != 0
	s := c.stream(h.streamID)
	if s == nil {
		_, err := io.CopyN(io.Discard, c.in.r, int64(h.length))
		return noEOF(err)
	}
	return s.receive(c.in.r, int(h.length), fin)
}

func (c *Conn) handleControl(f controlFrame) {
	switch f.typ {
	case typeSynReply:
		if s := c.stream(f.streamID); s != nil {
			s.reply(f.flags&flagFin != 0)
		}
	case typeHeaders:
		if s := c.stream(f.streamID); s != nil && f.flags&flagFin != 0 {
			s.remoteFinish()
		}
	case typeRstStream:
		if s := c.stream(f.streamID); s != nil {
			s.remoteReset(f.status)
		}
	case typeSynStream:
		// This side takes no stream of the server's.
		c.queueControl(appendRstStream(nil, f.streamID, statusRefusedStream))
	case typePing:
		if f.id%2 == 0 {
			// The server's: answer it.
			c.queueControl(appendPing(nil, f.id))
			return
		}
		c.pongs.Add(1)
		c.mu.Lock()
		if ch, ok := c.pings[f.id]; ok {
			close(ch)
			delete(c.pings, f.id)
		}
		c.mu.Unlock()
	case typeGoAway:
		c.goAway(f.id)
	}
	// SETTINGS and WINDOW_UPDATE (spdystream has no flow control), and
	// unknown types, are read and ignored.
}

// goAway takes the server's GOAWAY: no new streams, and the streams it
// did not take (above lastGood) are refused.
func (c *Conn) goAway(lastGood uint32) {
	c.mu.Lock()
	c.goneAway = true
	var refused []*Stream
	for id, s := range c.streams {
		if id > lastGood {
			refused = append(refused, s)
		}
	}
	c.mu.Unlock()
	for _, s := range refused {
		s.remoteReset(statusRefusedStream)
	}
}

// prefixReader reads prefix, then r; it lets go of prefix once read.
type prefixReader struct {
	prefix []byte
	r      io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.prefix) == 0 {
		return p.r.Read(b)
	}
	n := copy(b, p.prefix)
	p.prefix = p.prefix[n:]
	if len(p.prefix) == 0 {
		p.prefix = nil
	}
	return n, nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
