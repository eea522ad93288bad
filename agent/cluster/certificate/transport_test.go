package certificate

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// apiserver is a TLS server that asks for client certificates and
// records, per request, the serial of the one presented, and counts the
// connections made to it.
type apiserver struct {
	*httptest.Server
	mu    sync.Mutex
	conns int
	// serials are the client certificates' serials, one per request.
	serials []*big.Int
}

func newAPIServer(t *testing.T) *apiserver {
	a := &apiserver{}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var serial *big.Int
		if len(r.TLS.PeerCertificates) > 0 {
			serial = r.TLS.PeerCertificates[0].SerialNumber
		}
		a.mu.Lock()
		a.serials = append(a.serials, serial)
		a.mu.Unlock()
		if r.URL.Path != "/watch" {
			fmt.Fprint(w, "ok")
			return
		}
		// A watch: it streams until the connection goes.
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	a.EnableHTTP2 = true
	a.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	a.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			a.mu.Lock()
			a.conns++
			a.mu.Unlock()
		}
	}
	a.StartTLS()
	t.Cleanup(a.Close)
	return a
}

func (a *apiserver) state() (int, []*big.Int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns, append([]*big.Int(nil), a.serials...)
}

// The client config of a managed certificate: requests wait for the first
// certificate (none reaches the server anonymously), then present it;
// when a new one is issued, open connections (a watch) are closed and
// the next requests present the new one.
func TestRESTConfigPresentsTheCurrentCertificate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	s.life = 10 * time.Minute
	srv := newAPIServer(t)
	m := s.clientManager(t.TempDir(), true, s.creator())
	rc, err := m.RESTConfig(&rest.Config{
		Host:            srv.URL,
		BearerToken:     "dropped",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
	})
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return client.Do(req)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = get(ctx, "/version")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request before the first certificate: %v; want it to wait until its deadline", err)
	}
	if conns, _ := srv.state(); conns != 0 {
		t.Errorf("%d connections before the first certificate, want none", conns)
	}

	// The first certificate: a request waiting for it goes through.
	waiting := make(chan error, 1)
	go func() {
		resp, err := get(context.Background(), "/version")
		if err == nil {
			resp.Body.Close()
		}
		waiting <- err
	}()
	s.run(m)
	first := s.issue(s.pending(1))
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	watch, err := get(context.Background(), "/watch")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	watchEnded := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, watch.Body); watchEnded <- err }()
	polltest.Until(t, 10*time.Second, "the watch to reach the server", func() (bool, string) {
		_, serials := srv.state()
		return len(serials) == 2, fmt.Sprint(serials)
	})
	conns, serials := srv.state()
	for _, serial := range serials {
		if serial == nil || serial.Cmp(first.SerialNumber) != 0 {
			t.Errorf("requests presented %v, want the first certificate's %v", serials, first.SerialNumber)
			break
		}
	}

	// A new certificate: the watch's connection is closed, and the next
	// request comes on a new connection with the new certificate.
	polltest.Until(t, 10*time.Second, "the manager waiting for the renewal time", func() (bool, string) { return clk.Waiters() == 1, "" })
	clk.Step(7 * time.Minute)
	second := s.issue(s.pending(2))
	waitCurrent(t, m, second)
	select {
	case <-watchEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch's connection stayed open after the new certificate")
	}
	resp, err := get(context.Background(), "/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	newConns, serials := srv.state()
	if last := serials[len(serials)-1]; last == nil || last.Cmp(second.SerialNumber) != 0 || newConns <= conns {
		t.Errorf("after the rotation: serial %v over %d connections (%d before); want %v on a new one", last, newConns, conns, second.SerialNumber)
	}
}

// A config that has its own transport cannot get the Manager's.
func TestRESTConfigRefusesATransport(t *testing.T) {
	s := newSigner(t, clocktesting.NewFakeClock(time.Now()))
	m := s.clientManager(t.TempDir(), true, nil)
	if _, err := m.RESTConfig(&rest.Config{Host: "https://a", Transport: http.DefaultTransport}); err == nil {
		t.Error("no error")
	}
}
