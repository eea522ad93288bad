package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pfconsts "k8s.io/apimachinery/pkg/util/portforward"
	rcconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	spdyclient "github.com/minikubelet/minikubelet/internal/spdy"
)

// spdyPingPeriod keeps an idle SPDY connection to the runtime alive, as the
// kubelet keeps its own.
const spdyPingPeriod = 5 * time.Second

// statusWriteTimeout bounds writing the final status to a WebSocket client.
const statusWriteTimeout = 10 * time.Second

// translateV5 serves a WebSocket client of the v5.channel.k8s.io protocol,
// which the runtime's streaming server does not speak (it knows the
// channel.k8s.io ones up to v4, and SPDY): the agent ends the WebSocket
// itself and runs the session against the runtime over SPDY, as the
// kubelet does since 1.30 (ExtendWebSocketsToKubelet). Channels: 0 stdin,
// 1 stdout, 2 stderr, 3 the final status (a metav1.Status, with the exit
// code of a command that failed), 4 terminal resizes (JSON
// {"Width":w,"Height":h}); a client closes its stdin with the close
// signal (255, 0).
//
// The session ends when the command ends, or when the client goes away:
// the resize channel, which no client closes on its own, reads EOF only
// once the WebSocket is gone.
func translateV5(w http.ResponseWriter, r *http.Request, target *url.URL, opts streamOptions) {
	logger := klog.FromContext(r.Context())
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		rcconsts.StreamProtocolV5Name: {Binary: true, Channels: v5Channels(opts)},
	})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		// Open has answered the client.
		logger.V(2).Info("WebSocket handshake failed", "err", err)
		return
	}
	defer func() { _ = conn.Close() }()
	// The first message tells the client the streams are ready.
	first := rcconsts.StreamErr
	switch {
	case opts.stdout:
		first = rcconsts.StreamStdOut
	case opts.stderr:
		first = rcconsts.StreamStdErr
	}
	if _, err := streams[first].Write(nil); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sizes := make(chan remotecommand.TerminalSize) // written by the resize reader, which closes it
	go readResizes(ctx, cancel, streams[rcconsts.StreamResize], sizes)

	writeStatus := func(st metav1.Status) {
		b, err := json.Marshal(st)
		if err != nil {
			return
		}
		conn.SetWriteDeadline(statusWriteTimeout)
		_, _ = streams[rcconsts.StreamErr].Write(b)
	}
	err = streamOverSPDY(ctx, target, opts, streams, sizes)
	var exitErr exec.CodeExitError
	switch {
	case err == nil:
		writeStatus(metav1.Status{Status: metav1.StatusSuccess})
	case errors.As(err, &exitErr) && exitErr.Exited():
		writeStatus(metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  rcconsts.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", exitErr),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
				Type:    rcconsts.ExitCodeCauseType,
				Message: fmt.Sprint(exitErr.ExitStatus()),
			}}},
		})
	case ctx.Err() != nil:
		// The client went away.
	default:
		writeStatus(metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  metav1.StatusReasonInternalError,
			Code:    http.StatusInternalServerError,
			Message: err.Error(),
		})
	}
}

// v5Channels are the channels of a v5 session: the streams the client
// asked for, the status and the resizes.
func v5Channels(opts streamOptions) []wsstream.ChannelType {
	pick := func(on bool, t wsstream.ChannelType) wsstream.ChannelType {
		if on {
			return t
		}
		return wsstream.IgnoreChannel
	}
	ch := make([]wsstream.ChannelType, 5)
	ch[rcconsts.StreamStdIn] = pick(opts.stdin, wsstream.ReadChannel)
	ch[rcconsts.StreamStdOut] = pick(opts.stdout, wsstream.WriteChannel)
	ch[rcconsts.StreamStdErr] = pick(opts.stderr, wsstream.WriteChannel)
	ch[rcconsts.StreamErr] = wsstream.WriteChannel
	ch[rcconsts.StreamResize] = wsstream.ReadChannel
	return ch
}

// readResizes decodes the resize channel into sizes until it ends, then
// closes sizes and cancels the session: the channel ends when the
// WebSocket does.
func readResizes(ctx context.Context, cancel context.CancelFunc, stream io.Reader, sizes chan<- remotecommand.TerminalSize) {
	defer cancel()
	defer close(sizes)
	dec := json.NewDecoder(stream)
	for {
		var size remotecommand.TerminalSize
		if err := dec.Decode(&size); err != nil {
			return
		}
		select {
		case sizes <- size:
		case <-ctx.Done():
			return
		}
	}
}

// sizeQueue hands the client's resizes to the SPDY session.
type sizeQueue <-chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q
	if !ok {
		return nil
	}
	return &size
}

// streamOverSPDY runs the session against the runtime's streaming server
// over SPDY, with the client's streams. The SPDY client is the agent's
// own (internal/spdy), which keeps a few KiB per session where
// client-go's keeps about 700 KiB (its header compressor).
func streamOverSPDY(ctx context.Context, target *url.URL, opts streamOptions, streams []io.ReadWriteCloser, sizes <-chan remotecommand.TerminalSize) error {
	rt := spdyclient.NewRoundTripper(dialSPDY, spdyclient.Config{PingPeriod: spdyPingPeriod, Logger: klog.FromContext(ctx)})
	executor, err := remotecommand.NewSPDYExecutorRejectRedirects(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, target)
	if err != nil {
		return err
	}
	so := remotecommand.StreamOptions{Tty: opts.tty}
	if opts.stdin {
		so.Stdin = streams[rcconsts.StreamStdIn]
	}
	if opts.stdout {
		so.Stdout = streams[rcconsts.StreamStdOut]
	}
	if opts.stderr {
		so.Stderr = streams[rcconsts.StreamStdErr]
	}
	if opts.tty {
		so.TerminalSizeQueue = sizeQueue(sizes)
	}
	return executor.StreamWithContext(ctx, so)
}

// dialSPDY sends an upgrade request to the runtime's streaming server
// (spdyclient.DialFunc).
func dialSPDY(req *http.Request) (*spdyclient.Upgrade, error) {
	b, err := dialBackend(req.Context(), req.URL, req.Method, req.Header)
	if err != nil {
		return nil, err
	}
	return &spdyclient.Upgrade{Resp: b.resp, Conn: b.Conn, Buffered: b.pending}, nil
}

// tunnelWriteBuffers are the tunnels' WebSocket write buffers, held by a
// tunnel only while it writes a message.
var tunnelWriteBuffers sync.Pool

// tunnelPortForward serves a port-forward client that tunnels SPDY through
// a WebSocket (kubectl port-forward since 1.31 offers
// SPDY/3.1+portforward.k8s.io): the agent asks the runtime for the SPDY
// protocol the client named, and once the runtime has switched, answers
// the WebSocket handshake and carries the SPDY bytes between the
// WebSocket's binary messages and the runtime, as the kubelet does.
func tunnelPortForward(w http.ResponseWriter, r *http.Request, target *url.URL) {
	var protocols []string
	for _, p := range gwebsocket.Subprotocols(r) {
		if strings.HasPrefix(p, pfconsts.WebsocketsSPDYTunnelingPrefix) && strings.HasSuffix(p, pfconsts.KubernetesSuffix) {
			protocols = append(protocols, strings.TrimPrefix(p, pfconsts.WebsocketsSPDYTunnelingPrefix))
		}
	}
	header := backendHeader(r.Header)
	for _, k := range []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"} {
		header.Del(k)
	}
	header.Set("Connection", "Upgrade")
	header.Set("Upgrade", spdy.HeaderSpdy31)
	header["X-Stream-Protocol-Version"] = protocols
	backend := switchBackend(w, r, target, http.MethodPost, header)
	if backend == nil {
		return
	}
	defer backend.Close()
	var offer []string
	if p := strings.TrimSpace(backend.resp.Header.Get("X-Stream-Protocol-Version")); p != "" {
		offer = []string{pfconsts.WebsocketsSPDYTunnelingPrefix + p}
	}
	upgrader := gwebsocket.Upgrader{
		Subprotocols: offer,
		// Requests are authenticated by the port, not by cookies: a
		// browser's origin grants nothing here.
		CheckOrigin: func(*http.Request) bool { return true },
		// A whole read of the runtime's side goes out as one frame: with
		// gorilla's default 4 KiB, each 32 KiB read was 8 frames, 8 TLS
		// records and 8 writes (the kubelet's tunnel has the defaults).
		// The buffer is the pool's only while a message is written.
		WriteBufferSize: copyBufferSize,
		WriteBufferPool: &tunnelWriteBuffers,
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		// Upgrade has answered the client.
		klog.FromContext(r.Context()).V(2).Info("WebSocket handshake failed", "err", err)
		return
	}
	pipe(r.Context(), portforward.NewTunnelingConnection("server", ws), nil, backend.Conn, backend.pending)
}
