package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

const (
	// handshakeTimeout bounds connecting to the runtime's streaming server
	// and its answer to the upgrade request.
	handshakeTimeout = 30 * time.Second
	// lingerTimeout is how long a client may take to close its side once
	// the runtime has ended the session; see pipe.
	lingerTimeout = 10 * time.Second
	// maxErrorBody caps a refusal of the runtime relayed to the client.
	maxErrorBody = 64 << 10
)

// backendHeader is the header of the request to the runtime: the client's
// minus its credentials, which are the agent's business, not the
// runtime's.
func backendHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
		out.Del(k)
	}
	return out
}

// backendConn is an upgraded connection to the runtime's streaming
// server.
type backendConn struct {
	net.Conn
	// resp is the runtime's answer to the upgrade request.
	resp *http.Response
	// pending holds what the runtime sent after its answer's head, which
	// the answer's reader had already taken from Conn.
	pending []byte
}

// dialBackend connects to the runtime's streaming server at target, sends
// it an upgrade request (method, header) and reads the answer's head. On
// any answer but 101 the returned connection holds the answer's body, to
// be relayed, and must be closed.
func dialBackend(ctx context.Context, target *url.URL, method string, header http.Header) (*backendConn, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	host := target.Host
	if target.Port() == "" {
		host = net.JoinHostPort(target.Hostname(), map[string]string{"http": "80", "https": "443"}[target.Scheme])
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if target.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: target.Hostname(), NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		conn = tc
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	req := &http.Request{
		Method:     method,
		URL:        target,
		Host:       target.Host,
		Header:     header,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
	}
	if err := req.Write(conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("send the upgrade request: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("read the answer to the upgrade request: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	b := &backendConn{Conn: conn, resp: resp}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		b.pending, _ = br.Peek(br.Buffered())
	}
	return b, nil
}

// switchBackend connects to the runtime's streaming server at target and
// has it switch protocols (dialBackend). When it does not, switchBackend
// answers the client, relaying the runtime's refusal, and returns nil.
func switchBackend(w http.ResponseWriter, r *http.Request, target *url.URL, method string, header http.Header) *backendConn {
	backend, err := dialBackend(r.Context(), target, method, header)
	if err != nil {
		http.Error(w, fmt.Sprintf("connect to the runtime's streaming server: %v", err), http.StatusBadGateway)
		return nil
	}
	if backend.resp.StatusCode != http.StatusSwitchingProtocols {
		relayRefusal(w, backend.resp)
		_ = backend.Close()
		return nil
	}
	return backend
}

// relayRefusal answers the client with the runtime's refusal of an
// upgrade: its status, content type and (capped) body.
func relayRefusal(w http.ResponseWriter, resp *http.Response) {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxErrorBody))
}

// proxyUpgrade carries the client's upgrade request to the runtime's
// streaming server at target and, once the runtime has switched
// protocols, the connection both ways until the session ends. Whatever
// the two speak over it (SPDY/3.1 with the v1-v5 remotecommand or the
// port-forward protocol, WebSocket with the channel.k8s.io ones) passes
// through untouched, so TTY resizes, stdin and every port-forward stream
// flow as they would to the runtime itself. A refusal of the runtime is
// relayed as it is.
func proxyUpgrade(w http.ResponseWriter, r *http.Request, target *url.URL) {
	backend := switchBackend(w, r, target, r.Method, backendHeader(r.Header))
	if backend == nil {
		return
	}
	defer backend.Close()
	if got, want := backend.resp.Header.Get("Upgrade"), r.Header.Get("Upgrade"); !strings.EqualFold(got, want) {
		http.Error(w, fmt.Sprintf("the runtime's streaming server switched to %q, not to the %q asked for", got, want), http.StatusBadGateway)
		return
	}
	client, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, fmt.Sprintf("take over the connection: %v", err), http.StatusInternalServerError)
		return
	}
	defer client.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", backend.resp.Status)
	_ = backend.resp.Header.Write(&head)
	head.WriteString("\r\n")
	_ = client.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	if _, err := client.Write(head.Bytes()); err != nil {
		return
	}
	_ = client.SetWriteDeadline(time.Time{})
	// What the client sent after its request, before seeing the answer.
	var early []byte
	if n := buffered.Reader.Buffered(); n > 0 {
		early, _ = buffered.Peek(n)
	}
	pipe(r.Context(), client, early, backend.Conn, backend.pending)
}

// closeWriter is a connection that can end its sending side alone (TCP,
// TLS).
type closeWriter interface {
	CloseWrite() error
}

// copyBufferSize is the buffer of each direction of a stream.
const copyBufferSize = 32 << 10

var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

// copyResult says how a copy ended: reading its source (the source ended
// or broke) or writing its destination (the destination is gone).
type copyResult struct {
	readErr, writeErr error
}

// copyHalf copies src to dst until src ends. With drain, a failed write
// does not end it: what src still sends is read and dropped until src
// ends (the caller bounds that with a read deadline).
func copyHalf(dst io.Writer, src io.Reader, drain bool, onWriteErr func()) copyResult {
	buf := copyBuffers.Get().(*[copyBufferSize]byte)
	defer copyBuffers.Put(buf)
	var res copyResult
	for {
		n, err := src.Read(buf[:])
		if n > 0 && res.writeErr == nil {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				res.writeErr = werr
				onWriteErr()
				if !drain {
					return res
				}
			}
		}
		if err != nil {
			res.readErr = err
			return res
		}
	}
}

// pipe copies between client and backend until the session ends, then
// closes both. toBackend and toClient are what either side sent that was
// read before the pipe started; they go first.
//
// The session ends when either side ends it. When the runtime does, the
// client is sent everything and then the end of the stream, and what it
// still sends is read and dropped until it closes (for at most
// lingerTimeout): closing a socket with unread data resets it, and a
// reset loses what was not yet sent, the end of the output with the exit
// code in it. When the client ends, both close at once.
func pipe(ctx context.Context, client net.Conn, toBackend []byte, backend net.Conn, toClient []byte) {
	logger := klog.FromContext(ctx)
	linger := func() { _ = client.SetReadDeadline(time.Now().Add(lingerTimeout)) }
	backendDone := make(chan struct{}) // closed by the backend-to-client copy when it ends
	go func() {
		defer close(backendDone)
		var res copyResult
		if len(toClient) > 0 {
			_, res.writeErr = client.Write(toClient)
		}
		if res.writeErr == nil {
			res = copyHalf(client, backend, false, func() {})
		}
		if res.writeErr != nil {
			// The client is gone: so is the session.
			logger.V(4).Info("Stream to the client ended", "err", res.writeErr)
			_ = backend.Close()
			_ = client.Close()
			return
		}
		if !isClosedErr(res.readErr) {
			logger.V(4).Info("Stream from the runtime ended", "err", res.readErr)
		}
		if cw, ok := client.(closeWriter); ok {
			_ = cw.CloseWrite()
		}
		linger()
	}()
	if len(toBackend) > 0 {
		if _, err := backend.Write(toBackend); err != nil {
			linger() // copyHalf's writes fail too: it drains
		}
	}
	res := copyHalf(backend, client, true, linger)
	if res.writeErr == nil {
		// The client ended the session.
		if !isClosedErr(res.readErr) {
			logger.V(4).Info("Stream from the client ended", "err", res.readErr)
		}
		_ = backend.Close()
	}
	<-backendDone
	_ = backend.Close()
	_ = client.Close()
}

// isClosedErr reports the errors a copy ends with when its connection was
// closed, by either side, or timed out at the linger deadline.
func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
