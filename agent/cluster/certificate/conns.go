package certificate

import (
	"context"
	"net"
	"sync"
)

// connTracker keeps the connections that RESTConfig's clients dial, each
// with the certificate generation current when it was dialled, so that a
// new certificate closes exactly the connections that may present an
// older one. The kubelet's connrotation closes every connection instead:
// a request that dialled just after a new certificate became current
// (the first one, or one waiting for it) then fails with "use of closed
// network connection" for nothing.
//
// A connection is tagged before its TLS handshake, which reads the
// certificate later: one dialled just before a rotation and shaking
// hands after it presents the new certificate and is still closed. That
// errs on the safe side; the other order would keep old certificates on
// the wire.
type connTracker struct {
	mu    sync.Mutex
	gen   uint64                    // guarded by mu
	conns map[*trackedConn]struct{} // guarded by mu
}

func newConnTracker() *connTracker {
	return &connTracker{conns: make(map[*trackedConn]struct{})}
}

// dialer wraps dial so that its connections are tracked.
func (t *connTracker) dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		t.mu.Lock()
		gen := t.gen
		t.mu.Unlock()
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: conn, tracker: t, gen: gen}
		t.mu.Lock()
		stale := gen < t.gen
		if !stale {
			t.conns[tc] = struct{}{}
		}
		t.mu.Unlock()
		if stale {
			// A rotation came while it was dialling.
			_ = conn.Close()
			return nil, net.ErrClosed
		}
		return tc, nil
	}
}

// rotate starts a new generation and closes every connection of the
// older ones. Called after the new certificate has become current.
func (t *connTracker) rotate() {
	t.mu.Lock()
	t.gen++
	old := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		old = append(old, c)
		delete(t.conns, c)
	}
	t.mu.Unlock()
	for _, c := range old {
		_ = c.Conn.Close()
	}
}

// trackedConn is a tracked connection; closing it forgets it.
type trackedConn struct {
	net.Conn
	tracker *connTracker
	gen     uint64
}

func (c *trackedConn) Close() error {
	c.tracker.mu.Lock()
	delete(c.tracker.conns, c)
	c.tracker.mu.Unlock()
	return c.Conn.Close()
}
