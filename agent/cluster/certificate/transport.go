package certificate

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// Connection settings of RESTConfig's transport, the kubelet's.
const (
	dialTimeout         = 30 * time.Second
	dialKeepAlive       = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	maxIdleConnsPerHost = 25
)

// RESTConfig returns a client config for base's apiserver (its server,
// CA, TLS server name and client settings; its credentials are dropped)
// that authenticates with the Manager's certificate, as the kubelet's
// rotating client does:
//
//   - every TLS handshake presents Current (none once it has expired);
//   - until the Manager holds its first certificate, requests wait for it
//     (or for their context), so that nothing reaches the apiserver
//     anonymously and is refused meanwhile;
//   - whenever Run has a new certificate, every connection the config's
//     clients dialled before it was current is closed, so that requests
//     and watches come back on new connections, with the new certificate
//     (connTracker).
//
// Safe to call before and while Run runs; the clients may be used from
// any goroutine.
func (m *Manager) RESTConfig(base *rest.Config) (*rest.Config, error) {
	if base.Transport != nil || base.Dial != nil {
		return nil, fmt.Errorf("client config for the %s: it has its own transport or dialer", m.kind.noun)
	}
	rc := rest.AnonymousClientConfig(base)
	tlsConfig, err := rest.TLSConfigFor(rc)
	if err != nil {
		return nil, fmt.Errorf("client config for the %s: %w", m.kind.noun, err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert := m.Current(); cert != nil {
			return cert, nil
		}
		// No certificate: the handshake goes on without one.
		return &tls.Certificate{}, nil
	}
	proxy := http.ProxyFromEnvironment
	if rc.Proxy != nil {
		proxy = rc.Proxy
	}
	dial := m.conns.dialer((&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext)
	rc.Transport = &waitReady{ready: m.ready, next: utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               proxy,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: maxIdleConnsPerHost,
		DialContext:         dial,
	})}
	// The transport holds the TLS settings and the proxy now; client-go
	// refuses them beside a transport of one's own.
	rc.TLSClientConfig = rest.TLSClientConfig{}
	rc.Proxy = nil
	return rc, nil
}

// waitReady holds each request until ready is closed or the request's
// context ends.
type waitReady struct {
	ready <-chan struct{}
	next  http.RoundTripper
}

func (w *waitReady) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-w.ready:
	case <-req.Context().Done():
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("waiting for the node's first client certificate: %w", req.Context().Err())
	}
	return w.next.RoundTrip(req)
}

// WrappedRoundTripper is the transport under the wait, for client-go's
// connection helpers.
func (w *waitReady) WrappedRoundTripper() http.RoundTripper { return w.next }
