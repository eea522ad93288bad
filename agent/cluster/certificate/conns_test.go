package certificate

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

// TestConnTrackerClosesOnlyOlderGenerations: a rotation closes the
// connections dialled before it, not those dialled after it, and a
// connection whose dial a rotation overtook is refused.
func TestConnTrackerClosesOnlyOlderGenerations(t *testing.T) {
	tr := newConnTracker()
	var peers []net.Conn
	var hook func()
	dial := tr.dialer(func(context.Context, string, string) (net.Conn, error) {
		a, b := net.Pipe()
		peers = append(peers, b)
		if hook != nil {
			hook()
		}
		return a, nil
	})
	closed := func(c net.Conn) bool {
		_, err := c.Write([]byte{0})
		return errors.Is(err, io.ErrClosedPipe)
	}
	before, err := dial(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	tr.rotate()
	if !closed(before) {
		t.Error("a connection dialled before the rotation is still open")
	}
	after, err := dial(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	go func() { buf := make([]byte, 1); _, _ = peers[1].Read(buf) }()
	if closed(after) {
		t.Error("a connection dialled after the rotation was closed")
	}
	hook = tr.rotate
	if c, err := dial(context.Background(), "tcp", "x"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a dial overtaken by a rotation: %v, %v; want net.ErrClosed", c, err)
	}
	if got := len(tr.conns); got != 0 {
		t.Errorf("%d connections tracked after the last rotation, want 0", got)
	}
	_ = after.Close()
}
