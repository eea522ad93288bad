package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
)

// streamPort is a loopback TCP port that leads to the agent's socket, the
// same for every call.
func (a *agent) streamPort() int {
	a.sockTCP.once.Do(func() { a.sockTCP.port = a.socketOverTCP(a.t) })
	return a.sockTCP.port
}

// socketOverTCP serves the agent's local socket on a loopback TCP port, a
// connection for a connection, and returns the port. The streaming
// endpoints are debugging handlers, served on the kubelet port and the
// socket only; clients that dial TCP (client-go's SPDY and WebSocket
// dialers) reach the socket through it. The test process is root, as the
// socket asks of its peers.
func (a *agent) socketOverTCP(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pipeToSocket(c, a.socket)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// pipeToSocket copies c to a new connection to the socket at path and
// back, until either side closes.
func pipeToSocket(c net.Conn, path string) {
	defer c.Close()
	s, err := net.Dial("unix", path)
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
}
