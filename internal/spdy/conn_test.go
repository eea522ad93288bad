package spdy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/moby/spdystream"
	spdyframe "github.com/moby/spdystream/spdy"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// server is a spdystream server in process, over loopback TCP: what the
// runtime's streaming server runs.
type server struct {
	conn *spdystream.Connection
	// raw is its end of the TCP connection.
	raw net.Conn
	// streams are the streams the client opened and the server accepted.
	streams chan *spdystream.Stream
}

// refuseHeader, on a stream, has the server refuse it.
const refuseHeader = "Refuse"

// startServer connects a Conn with cfg to a new server.
func startServer(t *testing.T, cfg Config) (*Conn, *server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1) // written once by the accepting goroutine
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	sc, err := spdystream.NewConnection(raw, true)
	if err != nil {
		t.Fatal(err)
	}
	srv := &server{conn: sc, raw: raw, streams: make(chan *spdystream.Stream, 1000)}
	go sc.Serve(func(s *spdystream.Stream) {
		if s.Headers().Get(refuseHeader) != "" {
			_ = s.Refuse()
			return
		}
		if err := s.SendReply(http.Header{}, false); err != nil {
			return
		}
		srv.streams <- s
	})
	c := NewConn(client, nil, cfg)
	t.Cleanup(func() {
		_ = c.Close()
		_ = raw.Close()
		<-c.CloseChan()
	})
	return c, srv
}

// next is the next stream the server accepted.
func (s *server) next(t *testing.T) *spdystream.Stream {
	t.Helper()
	select {
	case st := <-s.streams:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("the server got no stream in 10s")
		return nil
	}
}

// echo has the server copy stream st back until the client's FIN, then
// send its own.
func echo(st *spdystream.Stream) {
	go func() {
		_, _ = io.Copy(st, st)
		_ = st.Close()
	}()
}

func create(t *testing.T, c *Conn, h http.Header) *Stream {
	t.Helper()
	st, err := c.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	return st.(*Stream)
}

// readerOnly hides a reader's WriteTo.
type readerOnly struct{ io.Reader }

// writerOnly hides a writer's ReadFrom.
type writerOnly struct{ io.Writer }

// Streams open with their headers, odd IDs that go up, once the server
// has replied.
func TestCreateStream(t *testing.T) {
	c, srv := startServer(t, Config{})
	for i, h := range []http.Header{
		{"Streamtype": {"error"}},
		{"Streamtype": {"stdin"}, "X-Values": {"a", "b"}},
		{},
	} {
		st := create(t, c, h)
		if want := uint32(2*i + 1); st.Identifier() != want {
			t.Errorf("stream %d: ID %d, want %d", i, st.Identifier(), want)
		}
		if !reflect.DeepEqual(st.Headers(), h) {
			t.Errorf("stream %d: Headers() %v, want %v", i, st.Headers(), h)
		}
		if got := srv.next(t).Headers(); !reflect.DeepEqual(got, h) {
			t.Errorf("stream %d: the server got headers %v, want %v", i, got, h)
		}
	}
	// A stream the server refuses.
	if st, err := c.CreateStream(http.Header{refuseHeader: {"yes"}}); err == nil {
		t.Errorf("a refused stream: %v, no error", st.Identifier())
	}
}

// Data goes both ways, through each of the ways to read and write.
func TestData(t *testing.T) {
	c, srv := startServer(t, Config{})
	payload := make([]byte, 1<<20+123)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		send func(*Stream) error
		recv func(*Stream) ([]byte, error)
	}{
		{"Write/Read", func(s *Stream) error {
			_, err := s.Write(payload)
			return err
		}, func(s *Stream) ([]byte, error) {
			return io.ReadAll(readerOnly{s})
		}},
		{"ReadFrom/WriteTo", func(s *Stream) error {
			_, err := io.Copy(s, readerOnly{bytes.NewReader(payload)})
			return err
		}, func(s *Stream) ([]byte, error) {
			var b bytes.Buffer
			_, err := io.Copy(writerOnly{&b}, s)
			return b.Bytes(), err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := create(t, c, http.Header{"Streamtype": {"stdin"}})
			echo(srv.next(t))
			errs := make(chan error, 1) // the sender's
			go func() {
				err := tc.send(st)
				if err == nil {
					err = st.Close()
				}
				errs <- err
			}()
			got, err := tc.recv(st)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("echoed %d bytes, want the %d sent", len(got), len(payload))
			}
		})
	}
}

// Close ends this side only: the server reads the end, and still sends.
func TestHalfClose(t *testing.T) {
	c, srv := startServer(t, Config{})
	st := create(t, c, nil)
	sst := srv.next(t)
	if _, err := st.Write([]byte("question")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := st.Write([]byte("more")); !errors.Is(err, errStreamClosed) {
		t.Errorf("Write after Close: %v, want %v", err, errStreamClosed)
	}
	got, err := io.ReadAll(sst)
	if err != nil || string(got) != "question" {
		t.Fatalf("the server read %q, %v", got, err)
	}
	if _, err := sst.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	if err := sst.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(st); err != nil || string(got) != "answer" {
		t.Errorf("read %q, %v; want the answer, then EOF", got, err)
	}
	// Closed both ways, the stream has left the connection.
	polltest.Until(t, 5*time.Second, "the stream leaves the connection", func() (bool, string) {
		return c.stream(st.id) == nil, ""
	})
}

// A reset ends a stream both ways, whichever side makes it; what the
// server sent before its reset is read.
func TestReset(t *testing.T) {
	c, srv := startServer(t, Config{})
	t.Run("client", func(t *testing.T) {
		st := create(t, c, nil)
		sst := srv.next(t)
		if err := st.Reset(); err != nil {
			t.Fatal(err)
		}
		if n, err := st.Read(make([]byte, 10)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("Read after Reset: %d, %v; want EOF", n, err)
		}
		if _, err := st.Write([]byte("x")); !errors.Is(err, errStreamReset) {
			t.Errorf("Write after Reset: %v, want %v", err, errStreamReset)
		}
		if got, err := io.ReadAll(sst); err != nil || len(got) != 0 {
			t.Errorf("the server read %q, %v; want EOF", got, err)
		}
	})
	t.Run("server", func(t *testing.T) {
		st := create(t, c, nil)
		sst := srv.next(t)
		if _, err := sst.Write([]byte("last words")); err != nil {
			t.Fatal(err)
		}
		if err := sst.Reset(); err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(st); err != nil || string(got) != "last words" {
			t.Errorf("read %q, %v; want what came before the reset, then EOF", got, err)
		}
		if _, err := st.Write([]byte("x")); !errors.Is(err, errStreamReset) {
			t.Errorf("Write after the server's reset: %v, want %v", err, errStreamReset)
		}
	})
}

// Each side answers the other's pings; the connection pings the server
// every PingPeriod.
func TestPing(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c, srv := startServer(t, Config{PingPeriod: 5 * time.Second, Clock: clk})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if _, err := srv.conn.Ping(); err != nil {
		t.Errorf("the server's ping: %v", err)
	}
	before := c.pongs.Load()
	for i := range 3 {
		polltest.Until(t, 5*time.Second, "the next ping's timer", func() (bool, string) {
			return clk.HasWaiters(), ""
		})
		clk.Step(5 * time.Second)
		polltest.Until(t, 5*time.Second, fmt.Sprintf("ping %d answered", i+1), func() (bool, string) {
			n := c.pongs.Load() - before
			return n >= int64(i+1), fmt.Sprintf("%d answers", n)
		})
	}
}

// Many streams at once, each with its own data.
func TestManyStreams(t *testing.T) {
	c, srv := startServer(t, Config{})
	const n = 200
	go func() {
		for range n {
			echo(<-srv.streams)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.CreateStream(http.Header{"X-I": {fmt.Sprint(i)}})
			if err != nil {
				errs <- err
				return
			}
			want := bytes.Repeat([]byte(fmt.Sprintf("%d,", i)), 1000*(i%7+1))
			go func() {
				_, _ = st.Write(want)
				_ = st.Close()
			}()
			got, err := io.ReadAll(st)
			if err != nil || !bytes.Equal(got, want) {
				errs <- fmt.Errorf("stream %d: %d bytes back, want %d: %w", i, len(got), len(want), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A server that says it goes away takes no new stream, and finishes the
// ones it has; its connection's end is then a clean one.
func TestServerGoesAway(t *testing.T) {
	c, srv := startServer(t, Config{})
	st := create(t, c, nil)
	sst := srv.next(t)
	done := make(chan error, 1) // the server's Close
	go func() { done <- srv.conn.Close() }()
	polltest.Until(t, 5*time.Second, "the server's GOAWAY", func() (bool, string) {
		_, err := c.CreateStream(nil)
		return errors.Is(err, errGoneAway), fmt.Sprint(err)
	})
	// The stream it has still works.
	if _, err := sst.Write([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	_ = sst.Close()
	_ = srv.raw.Close()
	if got, err := io.ReadAll(st); err != nil || string(got) != "still here" {
		t.Errorf("read %q, %v", got, err)
	}
	select {
	case <-c.CloseChan():
	case <-time.After(10 * time.Second):
		t.Fatal("CloseChan not closed 10s after the server closed")
	}
}

// A connection that breaks, without the server's GOAWAY, fails the
// streams' reads once what they hold is read.
func TestServerGone(t *testing.T) {
	c, srv := startServer(t, Config{})
	st := create(t, c, nil)
	sst := srv.next(t)
	if _, err := sst.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 5*time.Second, "the data arrives", func() (bool, string) {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.w-st.r == len("partial"), ""
	})
	_ = srv.raw.Close()
	got, err := io.ReadAll(st)
	if string(got) != "partial" || !errors.Is(err, ErrConnectionLost) {
		t.Errorf("read %q, %v; want the data, then %v", got, err, ErrConnectionLost)
	}
	select {
	case <-c.CloseChan():
	case <-time.After(10 * time.Second):
		t.Fatal("CloseChan not closed 10s after the connection broke")
	}
	if _, err := c.CreateStream(nil); err == nil {
		t.Error("CreateStream on a broken connection: no error")
	}
	if _, err := st.Write([]byte("x")); err == nil {
		t.Error("Write on a broken connection: no error")
	}
}

// A stream holds at most streamBuffer bytes nobody has read, whatever the
// server sends; the rest waits, and nothing is lost.
func TestBackPressure(t *testing.T) {
	c, srv := startServer(t, Config{})
	st := create(t, c, nil)
	sst := srv.next(t)
	payload := make([]byte, 4<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = sst.Write(payload)
		_ = sst.Close()
	}()
	polltest.Until(t, 10*time.Second, "the stream's buffer is full", func() (bool, string) {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.w-st.r == streamBuffer, fmt.Sprintf("%d bytes held", st.w-st.r)
	})
	got, err := io.ReadAll(st)
	if err != nil || !bytes.Equal(got, payload) {
		t.Errorf("read %d bytes, %v; want the %d sent", len(got), err, len(payload))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.buf != nil {
		t.Error("the stream keeps its buffer once it is read")
	}
}

// An idle connection closes after its idle timeout, not before.
func TestIdleTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c, _ := startServer(t, Config{Clock: clk})
	c.SetIdleTimeout(time.Minute)
	clk.Step(30 * time.Second)
	select {
	case <-c.CloseChan():
		t.Fatal("closed before its idle timeout")
	default:
	}
	clk.Step(31 * time.Second)
	select {
	case <-c.CloseChan():
	case <-time.After(10 * time.Second):
		t.Fatal("not closed 10s after its idle timeout")
	}
}

// Close resets what is open and ends the connection, once.
func TestClose(t *testing.T) {
	c, srv := startServer(t, Config{})
	st := create(t, c, nil)
	sst := srv.next(t)
	reading := make(chan error, 1) // the stream's reader
	go func() {
		_, err := io.ReadAll(st)
		reading <- err
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	select {
	case err := <-reading:
		if err != nil {
			t.Errorf("a read that Close ended: %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read still blocked 10s after Close")
	}
	// The server got the reset: its reads end.
	if _, err := io.ReadAll(sst); err != nil {
		t.Errorf("the server's read: %v", err)
	}
	select {
	case <-c.CloseChan():
	case <-time.After(10 * time.Second):
		t.Fatal("CloseChan not closed 10s after Close")
	}
	if _, err := c.CreateStream(nil); !errors.Is(err, errConnClosed) {
		t.Errorf("CreateStream after Close: %v, want %v", err, errConnClosed)
	}
}

// What the server sent with its answer to the upgrade, read before the
// connection was made, is read first, then the connection itself. (A
// server can only send its own frames then: its PINGs here, answered in
// order.)
func TestBuffered(t *testing.T) {
	var early bytes.Buffer
	framer, err := spdyframe.NewFramer(&early, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := framer.WriteFrame(&spdyframe.PingFrame{Id: 2}); err != nil {
		t.Fatal(err)
	}
	client, peer := net.Pipe()
	defer peer.Close()
	c := NewConn(client, early.Bytes(), Config{})
	defer c.Close()
	answers := make(chan uint32, 2)
	go func() {
		defer close(answers)
		fr := frameReader{r: peer}
		for {
			h, err := fr.readHead()
			if err != nil {
				return
			}
			if !h.control {
				if _, err := io.CopyN(io.Discard, peer, int64(h.length)); err != nil {
					return
				}
				continue
			}
			f, err := fr.readControl(h)
			if err != nil {
				return
			}
			if f.typ == typePing {
				answers <- f.id
			}
		}
	}()
	pf, err := spdyframe.NewFramer(peer, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = pf.WriteFrame(&spdyframe.PingFrame{Id: 4}) }()
	var got []uint32
	for len(got) < 2 {
		select {
		case id, ok := <-answers:
			if !ok {
				t.Fatalf("the connection ended after answering %v", got)
			}
			got = append(got, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("answered the pings %v in 10s, want [2 4]", got)
		}
	}
	if !reflect.DeepEqual(got, []uint32{2, 4}) {
		t.Errorf("answered the pings %v, want [2 4]", got)
	}
}

// ReadFrom sends bulk input in frames of maxDataFrame bytes, and goes
// back to its small buffer once the source has little to say.
func TestReadFromFrames(t *testing.T) {
	client, peer := net.Pipe()
	c := NewConn(client, nil, Config{})
	defer c.Close()
	frames := make(chan int, 100) // the data frames' lengths, written by the peer's reader
	go func() {
		defer close(frames)
		fr := frameReader{r: peer}
		for {
			h, err := fr.readHead()
			if err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, peer, int64(h.length)); err != nil {
				return
			}
			if !h.control {
				frames <- int(h.length)
			}
		}
	}()
	st := newStream(c, 1, nil)
	pr, pw := io.Pipe()
	go func() {
		// As wsstream hands stdin on: a write per WebSocket message.
		for _, n := range []int{maxDataFrame, maxDataFrame, maxDataFrame, 100, 10} {
			_, _ = pw.Write(make([]byte, n))
		}
		_ = pw.Close()
	}()
	if _, err := st.ReadFrom(pr); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	var got []int
	for n := range frames {
		got = append(got, n)
	}
	want := []int{readFromBuffer, maxDataFrame - readFromBuffer, maxDataFrame, maxDataFrame, 100, 10}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data frames of %v bytes, want %v", got, want)
	}
}
