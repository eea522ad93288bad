package spdy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	spdyframe "github.com/moby/spdystream/spdy"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// scriptedServer answers each SYN_STREAM with the next of replies (frames
// of spdystream's framer, made beforehand) and reads everything else
// away: a server whose own memory is next to nothing, so that a test can
// weigh the client's.
func scriptedServer(t *testing.T, ln net.Listener, replies [][]byte) {
	t.Helper()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			var head [8]byte
			next := 0
			for {
				if _, err := io.ReadFull(conn, head[:]); err != nil {
					return
				}
				length := int64(binary.BigEndian.Uint32(head[4:]) & 0xffffff)
				if _, err := io.CopyN(io.Discard, conn, length); err != nil {
					return
				}
				if head[0]&0x80 != 0 && binary.BigEndian.Uint16(head[2:]) == typeSynStream && next < len(replies) {
					if _, err := conn.Write(replies[next]); err != nil {
						return
					}
					next++
				}
			}
		}()
	}
}

// An open remotecommand session's connection (five streams, idle) keeps a
// few KiB of heap, where spdystream's keeps about 700 KiB.
func TestMemoryPerConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("weighs the heap")
	}
	var replies [][]byte
	var wire bytes.Buffer
	framer, err := spdyframe.NewFramer(&wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint32(1); id <= 9; id += 2 {
		if err := framer.WriteFrame(&spdyframe.SynReplyFrame{StreamId: spdyframe.StreamId(id), Headers: http.Header{}}); err != nil {
			t.Fatal(err)
		}
		replies = append(replies, bytes.Clone(wire.Bytes()))
		wire.Reset()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go scriptedServer(t, ln, replies)

	const n = 50
	open := func() *Conn {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c := NewConn(raw, nil, Config{PingPeriod: time.Hour})
		for _, typ := range []string{"error", "stdin", "stdout", "stderr", "resize"} {
			st := create(t, c, http.Header{"Streamtype": {typ}})
			// A reader waits on each, as remotecommand's do.
			go func() { _, _ = io.Copy(io.Discard, st) }()
		}
		return c
	}
	// One first, so that what every connection shares is counted before.
	conns := []*Conn{open()}
	before := liveHeap()
	for range n {
		conns = append(conns, open())
	}
	perConn := (liveHeap() - before) / n
	for _, c := range conns {
		_ = c.Close()
	}
	t.Logf("%d bytes of heap per connection", perConn)
	// Both ends of each TCP connection are counted too (the server's is
	// in this process), and the readers' goroutines' heap parts.
	if perConn > 16<<10 {
		t.Errorf("%d bytes of heap per connection, more than 16 KiB", perConn)
	}
}

// liveHeap is the heap in use after a collection (two: the pools' idle
// buffers go on the second).
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Once its connections are closed, nothing of the package runs.
func TestNoGoroutineLeft(t *testing.T) {
	polltest.Until(t, 10*time.Second, "the package's goroutines end", func() (bool, string) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var left []string
		for g := range strings.SplitSeq(stacks, "\n\n") {
			if strings.Contains(g, "internal/spdy.(*") && !strings.Contains(g, "TestNoGoroutineLeft") {
				left = append(left, g)
			}
		}
		return len(left) == 0, fmt.Sprintf("%d goroutines left: %s", len(left), strings.Join(left, "\n\n"))
	})
}
