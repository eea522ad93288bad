package spdy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"k8s.io/streaming/pkg/httpstream"
)

const (
	// streamBuffer is the most a stream holds that nobody has read yet:
	// when it is full, the read loop waits. Its buffer comes from a pool
	// when data arrives and goes back once it is read, so that an idle
	// stream holds none.
	streamBuffer = 16 << 10
	// maxDataFrame is the largest data frame this side sends (the server
	// takes a whole frame into memory before it hands it on).
	maxDataFrame = 32 << 10
	// readFromBuffer is the buffer ReadFrom (which io.Copy to a stream
	// uses) reads with at first, and again once a read has returned less
	// than it holds: a read blocks holding its buffer, which for a
	// terminal's stdin is most of the session. From a read that fills
	// it, ReadFrom reads with a buffer of maxDataFrame bytes.
	readFromBuffer = 4 << 10
)

var (
	errStreamClosed = errors.New("spdy: write on a stream this side has closed")
	errStreamReset  = errors.New("spdy: stream reset")
)

// streamBuffers, readFromBuffers and frameBuffers are idle buffers,
// shared by every connection.
var (
	streamBuffers   = sync.Pool{New: func() any { return new([streamBuffer]byte) }}
	readFromBuffers = sync.Pool{New: func() any { return new([readFromBuffer]byte) }}
	frameBuffers    = sync.Pool{New: func() any { return new([maxDataFrame]byte) }}
)

// Stream is a stream of a Conn: an httpstream.Stream. Read, WriteTo and
// one writer (Write, ReadFrom) at a time, with Close and Reset from
// anywhere.
//
// Its life, by what each side has sent:
//
//	open --this side's FIN (Close)--> half-closed, this side ---\
//	  \--the server's FIN----------> half-closed, the server's --+--> closed
//	any --RST_STREAM either way, or the connection's end------------> closed
//
// What the server sent before its FIN, its reset or the connection's end
// can still be read; after a reset this side made, nothing can.
type Stream struct {
	c       *Conn
	id      uint32
	headers http.Header
	// replied is closed when the server has answered the SYN_STREAM, or
	// refused it (replyErr), or the connection has ended.
	replied chan struct{}

	mu   sync.Mutex
	cond sync.Cond // on mu: the buffer, or the stream's state, changed
	// The fields below are guarded by mu.
	replyErr error
	// buf[r:w] is what the server sent that has not been read; buf is
	// nil when that is nothing. filling is set while the read loop reads
	// into buf[w:], lent while WriteTo writes buf[r:w] out: meanwhile
	// nobody else gives buf back.
	buf           *[streamBuffer]byte
	r, w          int
	filling, lent bool
	// remoteFin, localFin: that side has sent its FIN. remoteRst: the
	// server reset the stream; localRst: this side did, or closed the
	// connection. lost: the connection ended under the stream.
	remoteFin, localFin, remoteRst, localRst bool
	lost                                     error
}

var _ httpstream.Stream = (*Stream)(nil)

func newStream(c *Conn, id uint32, headers http.Header) *Stream {
	s := &Stream{c: c, id: id, headers: headers, replied: make(chan struct{})}
	s.cond.L = &s.mu
	return s
}

// Headers returns the headers the stream was opened with.
func (s *Stream) Headers() http.Header { return s.headers }

// Identifier returns the stream's ID.
func (s *Stream) Identifier() uint32 { return s.id }

// Read reads what the server sent. It returns io.EOF once the server has
// ended its side (FIN or reset), or this side has reset the stream;
// ErrConnectionLost when the connection broke under it.
func (s *Stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.localRst {
			return 0, io.EOF
		}
		if s.r < s.w {
			if len(p) == 0 {
				return 0, nil
			}
			n := copy(p, s.buf[s.r:s.w])
			s.r += n
			s.consumedLocked()
			return n, nil
		}
		if err := s.endLocked(); err != nil {
			return 0, err
		}
		s.cond.Wait()
	}
}

// WriteTo writes what the server sends to w until the server's side ends,
// without a buffer of its own: io.Copy from a stream uses it.
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	var total int64
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.localRst {
			return total, nil
		}
		if s.r == s.w {
			if err := s.endLocked(); err != nil {
				if errors.Is(err, io.EOF) {
					return total, nil
				}
				return total, err
			}
			s.cond.Wait()
			continue
		}
		p := s.buf[s.r:s.w]
		s.lent = true
		s.mu.Unlock()
		n, err := w.Write(p)
		s.mu.Lock()
		s.lent = false
		total += int64(n)
		if !s.localRst {
			s.r += n
		}
		s.consumedLocked()
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
}

// endLocked is the error a read returns when nothing is buffered: nil
// while the server's side is open.
func (s *Stream) endLocked() error {
	switch {
	case s.remoteFin || s.remoteRst || s.localRst:
		return io.EOF
	case s.lost != nil:
		return s.lost
	}
	return nil
}

// consumedLocked gives the buffer back when it holds nothing, and wakes
// the read loop.
func (s *Stream) consumedLocked() {
	if s.buf != nil && !s.filling && !s.lent && (s.r == s.w || s.localRst) {
		streamBuffers.Put(s.buf)
		s.buf, s.r, s.w = nil, 0, 0
	}
	s.cond.Broadcast()
}

// Write sends p, in data frames of at most maxDataFrame bytes.
func (s *Stream) Write(p []byte) (int, error) {
	var n int
	for {
		chunk := p[:min(len(p), maxDataFrame)]
		if err := s.writable(); err != nil {
			return n, err
		}
		if err := s.c.writeData(s.id, false, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
		if len(p) == 0 {
			return n, nil
		}
	}
}

// ReadFrom sends what r reads until r ends: io.Copy to a stream uses it.
// It reads with a small buffer (readFromBuffer), and with one of a data
// frame's size from a read that filled the small one to a read that
// returned less than the small one holds: bulk input goes in large
// frames, and a terminal's stdin (keys, now and then a paste) waits with
// the small buffer.
func (s *Stream) ReadFrom(r io.Reader) (int64, error) {
	small := readFromBuffers.Get().(*[readFromBuffer]byte)
	defer readFromBuffers.Put(small)
	var large *[maxDataFrame]byte
	defer func() {
		if large != nil {
			frameBuffers.Put(large)
		}
	}()
	var total int64
	for {
		buf := small[:]
		if large != nil {
			buf = large[:]
		}
		n, err := r.Read(buf)
		if n > 0 {
			if werr := s.writable(); werr != nil {
				return total, werr
			}
			if werr := s.c.writeData(s.id, false, buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		switch {
		case large == nil && n == len(small):
			large = frameBuffers.Get().(*[maxDataFrame]byte)
		case large != nil && n < len(small):
			frameBuffers.Put(large)
			large = nil
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// writable says whether this side may still send on the stream.
func (s *Stream) writable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.localFin:
		return errStreamClosed
	case s.localRst || s.remoteRst:
		return errStreamReset
	case s.lost != nil:
		return s.lost
	}
	return nil
}

// Close ends this side of the stream (a FIN): the server reads its end,
// and can still send. Later calls, and calls on a stream reset or on a
// closed connection, do nothing.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.localFin || s.localRst || s.remoteRst || s.lost != nil {
		s.mu.Unlock()
		return nil
	}
	s.localFin = true
	done := s.remoteFin
	s.mu.Unlock()
	if done {
		s.c.remove(s)
	}
	return s.c.writeData(s.id, true, nil)
}

// Reset ends the stream both ways (a RST_STREAM): what the server sent
// and was not read is dropped.
func (s *Stream) Reset() error {
	s.c.remove(s)
	if !s.abort() {
		return nil
	}
	return s.c.write(appendRstStream(nil, s.id, statusCancel))
}

// abort resets the stream on this side, and says whether the server has
// yet to be told (the stream was not closed both ways).
func (s *Stream) abort() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.localRst {
		return false
	}
	tell := !s.remoteRst && s.lost == nil && (!s.localFin || !s.remoteFin)
	s.localRst = true
	s.consumedLocked()
	s.failReplyLocked(errStreamReset)
	return tell
}

// receive reads a data frame's n bytes of payload from r into the
// stream's buffer, waiting while it is full.
func (s *Stream) receive(r io.Reader, n int, fin bool) error {
	for n > 0 {
		s.mu.Lock()
		// Close resets every stream still on the connection, which ends
		// this wait.
		for s.buf != nil && s.w == len(s.buf) && s.r < s.w && !s.localRst {
			s.cond.Wait()
		}
		if s.localRst || s.remoteFin || s.remoteRst {
			// Dropped: this side reset the stream, or the server sends
			// past its own end.
			s.mu.Unlock()
			_, err := io.CopyN(io.Discard, r, int64(n))
			return noEOF(err)
		}
		switch {
		case s.buf == nil:
			s.buf = streamBuffers.Get().(*[streamBuffer]byte)
		case s.r == s.w:
			s.r, s.w = 0, 0
		}
		dst := s.buf[s.w:min(len(s.buf), s.w+n)]
		s.filling = true
		s.mu.Unlock()
		_, err := io.ReadFull(r, dst)
		s.mu.Lock()
		s.filling = false
		if err == nil && !s.localRst {
			s.w += len(dst)
		}
		s.consumedLocked()
		s.mu.Unlock()
		if err != nil {
			return noEOF(err)
		}
		n -= len(dst)
	}
	if fin {
		s.remoteFinish()
	}
	return nil
}

// reply takes the server's SYN_REPLY.
func (s *Stream) reply(fin bool) {
	s.mu.Lock()
	if !isClosed(s.replied) {
		close(s.replied)
	}
	s.mu.Unlock()
	if fin {
		s.remoteFinish()
	}
}

// remoteFinish takes the server's FIN.
func (s *Stream) remoteFinish() {
	s.mu.Lock()
	s.remoteFin = true
	done := s.localFin
	s.cond.Broadcast()
	s.mu.Unlock()
	if done {
		s.c.remove(s)
	}
}

// remoteReset takes the server's RST_STREAM.
func (s *Stream) remoteReset(status uint32) {
	s.c.remove(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remoteRst = true
	s.failReplyLocked(fmt.Errorf("spdy: the server reset stream %d (status %d)", s.id, status))
	s.cond.Broadcast()
}

// connEnded ends the stream with its connection; cause, when not nil,
// is what reads return once the buffer is read.
func (s *Stream) connEnded(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cause == nil {
		cause = io.EOF
	}
	if s.lost == nil {
		s.lost = cause
	}
	s.failReplyLocked(fmt.Errorf("spdy: stream %d: %w", s.id, errConnClosed))
	s.cond.Broadcast()
}

// failReplyLocked has a stream still waiting for its reply fail with err.
func (s *Stream) failReplyLocked(err error) {
	if !isClosed(s.replied) {
		s.replyErr = err
		close(s.replied)
	}
}

func (s *Stream) replyError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replyErr
}
