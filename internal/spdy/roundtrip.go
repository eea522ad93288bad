package spdy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"k8s.io/streaming/pkg/httpstream"
)

// Upgrade is a server's answer to an upgrade request.
type Upgrade struct {
	// Resp is the answer. When it is not 101, its Body reads the
	// refusal from Conn.
	Resp *http.Response
	// Conn is the connection; past a 101, the server speaks SPDY on it.
	Conn net.Conn
	// Buffered is what was read from Conn past the answer's head.
	Buffered []byte
}

// DialFunc connects to the server of req.URL, sends it req (an upgrade
// request, whose context bounds the handshake) and reads the head of its
// answer.
type DialFunc func(req *http.Request) (*Upgrade, error)

// maxRefusal caps the refusal of a server that did not switch to SPDY
// that makes an error.
const maxRefusal = 64 << 10

// RoundTripper upgrades one request to SPDY/3.1 with dial, and makes the
// connection: an httpstream.UpgradeRoundTripper (client-go's
// remotecommand.NewSPDYExecutorForTransports takes it, through
// transport/spdy.NewUpgraderForStreaming). One round trip each, and its
// NewConnection: make one per session.
type RoundTripper struct {
	dial DialFunc
	cfg  Config

	mu sync.Mutex
	up *Upgrade
}

var _ httpstream.UpgradeRoundTripper = (*RoundTripper)(nil)

// NewRoundTripper returns a RoundTripper whose connections have cfg.
func NewRoundTripper(dial DialFunc, cfg Config) *RoundTripper {
	return &RoundTripper{dial: dial, cfg: cfg}
}

// RoundTrip sends req with the upgrade headers and returns the server's
// answer. When the server does not switch protocols, closing the answer's
// body closes the connection.
func (rt *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, "SPDY/3.1")
	up, err := rt.dial(req)
	if err != nil {
		return nil, err
	}
	if up.Resp.StatusCode != http.StatusSwitchingProtocols {
		up.Resp.Body = &closingBody{ReadCloser: up.Resp.Body, conn: up.Conn}
	}
	rt.mu.Lock()
	if rt.up != nil {
		_ = rt.up.Conn.Close()
	}
	rt.up = up
	rt.mu.Unlock()
	return up.Resp, nil
}

// NewConnection checks that resp, the answer RoundTrip returned, switched
// to SPDY/3.1 and makes the connection; otherwise it returns the server's
// refusal as an error, in the words of client-go's round tripper.
func (rt *RoundTripper) NewConnection(resp *http.Response) (httpstream.Connection, error) {
	rt.mu.Lock()
	up := rt.up
	rt.up = nil
	rt.mu.Unlock()
	if up == nil || up.Resp != resp {
		return nil, errors.New("spdy: NewConnection of an answer this round tripper did not return")
	}
	connection := strings.ToLower(resp.Header.Get(httpstream.HeaderConnection))
	upgrade := strings.ToLower(resp.Header.Get(httpstream.HeaderUpgrade))
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.Contains(connection, "upgrade") || !strings.Contains(upgrade, "spdy/3.1") {
		defer resp.Body.Close() // closes the connection
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
		if err != nil {
			return nil, errors.New("unable to upgrade connection: unable to read error from server response")
		}
		return nil, fmt.Errorf("unable to upgrade connection: %s", refusalMessage(body))
	}
	return NewConn(up.Conn, up.Buffered, rt.cfg), nil
}

// refusalMessage is the message of a refusal: a Status's message (or
// error), else the body's text.
func refusalMessage(body []byte) string {
	var status struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &status) == nil {
		for _, m := range []string{status.Message, status.Error} {
			if m = strings.TrimSpace(m); m != "" {
				return m
			}
		}
	}
	if m := strings.TrimSpace(string(body)); m != "" {
		return m
	}
	return "empty server response"
}

// closingBody closes the connection with the body.
type closingBody struct {
	io.ReadCloser
	conn net.Conn
}

func (b *closingBody) Close() error {
	err := b.ReadCloser.Close()
	_ = b.conn.Close()
	return err
}
