package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/localsock"
)

type fakePods []*v1.Pod

func (f fakePods) PodsWithStatus() []*v1.Pod { return f }

type fakeErrors []sources.ManifestError

func (f fakeErrors) Errors() []sources.ManifestError { return f }

// testServer is a running Server and the addresses of its listeners.
type testServer struct {
	s *Server
	// port, readOnly and healthz are base URLs, "" when not served.
	port, readOnly, healthz string
	// socket is the local socket's path.
	socket string
	pki    *pki
}

// serve serves cfg on loopback: every port it sets to -1 on a free port,
// the kubelet port with p's serving certificate, and the local socket.
func serve(t *testing.T, cfg Config, p *pki) *testServer {
	t.Helper()
	cfg.Address, cfg.HealthzAddress = "127.0.0.1", "127.0.0.1"
	for _, port := range []*int{&cfg.Port, &cfg.ReadOnlyPort, &cfg.HealthzPort} {
		if *port == -1 {
			*port = freePort(t)
		}
	}
	if cfg.Port != 0 && cfg.TLS.Rotating == nil && cfg.TLS.CertDir == "" {
		cfg.TLS.CertFile, cfg.TLS.KeyFile = p.certFile, p.keyFile
	}
	dir, err := os.MkdirTemp("", "mk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg.SocketPath = filepath.Join(dir, "mk.sock")
	s, err := Listen(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	ts := &testServer{s: s, socket: cfg.SocketPath, pki: p}
	base := func(scheme string, ln net.Listener) string {
		if ln == nil {
			return ""
		}
		return scheme + "://" + ln.Addr().String()
	}
	ts.port, ts.readOnly, ts.healthz = base("https", s.portLn), base("http", s.readOnlyLn), base("http", s.healthzLn)
	return ts
}

// client is how a test reaches the server: plain, through the socket, or
// over TLS with a client certificate or a token.
type client struct {
	http  *http.Client
	token string
}

func plain() client { return client{http: &http.Client{Timeout: 10 * time.Second}} }

func (ts *testServer) viaSocket() client {
	return client{http: &http.Client{Transport: localsock.Transport(ts.socket), Timeout: 10 * time.Second}}
}

// tlsClient trusts the test CA and presents certs.
func (ts *testServer) tlsClient(certs ...tls.Certificate) client {
	tc := &tls.Config{RootCAs: ts.pki.pool, Certificates: certs, MinVersion: tls.VersionTLS12}
	return client{http: &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}}
}

func (c client) withToken(token string) client { c.token = token; return c }

func (c client) do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (c client) get(t *testing.T, url string) (int, string) {
	t.Helper()
	return c.do(t, http.MethodGet, url)
}

// fakeStats serves fixed stats.
type fakeStats struct{}

func (fakeStats) SummaryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"node":{}}`)) })
}

func (fakeStats) CadvisorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("container_cpu_usage_seconds_total 1\n"))
	})
}

func (fakeStats) ResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("node_cpu_usage_seconds_total 1 1700000000000\n"))
	})
}

// Until there are stats to serve (the runtime has not answered), the
// stats endpoints answer 503; without Stats they are not served.
func TestStatsUnavailable(t *testing.T) {
	ts := serve(t, Config{ReadOnlyPort: -1, Pods: fakePods{}, Stats: func() Stats { return nil }}, nil)
	for _, path := range []string{"/stats/summary", "/metrics/cadvisor", "/metrics/resource"} {
		if code, body := plain().get(t, ts.readOnly+path); code != http.StatusServiceUnavailable || !strings.Contains(body, "container runtime") {
			t.Errorf("%s before the runtime answered: %d %q, want 503 saying why", path, code, body)
		}
	}
	none := serve(t, Config{ReadOnlyPort: -1, Pods: fakePods{}}, nil)
	if code, _ := plain().get(t, none.readOnly+"/stats/summary"); code != http.StatusNotFound {
		t.Errorf("/stats/summary without Stats: %d, want 404", code)
	}
}

func TestEndpoints(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	healthy := true
	cfg := Config{
		ReadOnlyPort: -1,
		HealthzPort:  -1,
		Pods:         fakePods{pod},
		Checks: []Check{{Name: "pleg", Check: func() error {
			if healthy {
				return nil
			}
			return errors.New("pleg was last seen active 4m0s ago")
		}}},
		ManifestErrors: fakeErrors{{Source: "file", Origin: "/m/bad.yaml", Err: errors.New(`spec.containers[0].image: Required value`)}},
		Metrics:        http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metric 1\n")) }),
		ProbeMetrics:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("prober_probe_total 1\n")) }),
		Stats:          func() Stats { return fakeStats{} },
		Configz:        map[string]string{"address": "127.0.0.1"},
	}
	ts := serve(t, cfg, nil)
	ro, hz, sock := ts.readOnly, ts.healthz, "http://localhost"

	tests := []struct {
		name     string
		c        client
		url      string
		wantCode int
		check    func(t *testing.T, body string)
	}{
		{"pods", plain(), ro + "/pods", 200, func(t *testing.T, body string) {
			var list v1.PodList
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 || list.Items[0].Name != "web-n1" || list.Items[0].Status.Phase != v1.PodRunning {
				t.Errorf("PodList = %+v", list)
			}
		}},
		{"healthz on read-only port", plain(), ro + "/healthz", 200, func(t *testing.T, body string) {
			if body != "ok" {
				t.Errorf("body %q, want ok", body)
			}
		}},
		{"healthz port", plain(), hz + "/healthz", 200, nil},
		{"manifest errors", ts.viaSocket(), sock + "/manifests/errors", 200, func(t *testing.T, body string) {
			var out struct {
				Errors []map[string]string `json:"errors"`
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Errors) != 1 || out.Errors[0]["origin"] != "/m/bad.yaml" || out.Errors[0]["source"] != "file" || !strings.Contains(out.Errors[0]["error"], "spec.containers[0].image") {
				t.Errorf("errors = %v", out.Errors)
			}
		}},
		{"configz", ts.viaSocket(), sock + "/configz", 200, func(t *testing.T, body string) {
			if strings.TrimSpace(body) != `{"kubeletconfig":{"address":"127.0.0.1"}}` {
				t.Errorf("body %q", body)
			}
		}},
		{"metrics", plain(), ro + "/metrics", 200, func(t *testing.T, body string) {
			if body != "metric 1\n" {
				t.Errorf("body %q", body)
			}
		}},
		{"stats summary", plain(), ro + "/stats/summary", 200, func(t *testing.T, body string) {
			if body != `{"node":{}}` {
				t.Errorf("body %q", body)
			}
		}},
		{"cadvisor metrics", plain(), ro + "/metrics/cadvisor", 200, func(t *testing.T, body string) {
			if !strings.HasPrefix(body, "container_cpu_usage_seconds_total") {
				t.Errorf("body %q", body)
			}
		}},
		{"resource metrics", plain(), ro + "/metrics/resource", 200, func(t *testing.T, body string) {
			if !strings.HasPrefix(body, "node_cpu_usage_seconds_total") {
				t.Errorf("body %q", body)
			}
		}},
		{"probe metrics", plain(), ro + "/metrics/probes", 200, func(t *testing.T, body string) {
			if body != "prober_probe_total 1\n" {
				t.Errorf("body %q", body)
			}
		}},
		{"pods not on healthz port", plain(), hz + "/pods", 404, nil},
		{"pprof index", ts.viaSocket(), sock + "/debug/pprof/", 200, func(t *testing.T, body string) {
			if !strings.Contains(body, "goroutine") {
				t.Errorf("pprof index lacks the goroutine profile")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := tt.c.get(t, tt.url)
			if code != tt.wantCode {
				t.Fatalf("HTTP %d, want %d: %s", code, tt.wantCode, body)
			}
			if tt.check != nil {
				tt.check(t, body)
			}
		})
	}

	healthy = false
	code, body := plain().get(t, hz+"/healthz")
	if code != 500 || !strings.Contains(body, "pleg: pleg was last seen active") {
		t.Errorf("unhealthy /healthz = %d %q, want 500 naming the failed check", code, body)
	}
}

// fakeRunning lists what the runtime runs.
type fakeRunning struct{}

func (fakeRunning) RunningPods() []*v1.Pod { return []*v1.Pod{{}} }

// What each listener serves: the read-only port only what the kubelet's
// read-only port serves; the kubelet port everything (the debugging
// handlers only when enabled); the socket everything, always.
func TestWhereEndpointsAreServed(t *testing.T) {
	p := newPKI(t)
	logs := &fakeLogs{path: filepath.Join(t.TempDir(), "0.log")}
	if err := os.WriteFile(logs.path, []byte(criLog), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Port: -1, ReadOnlyPort: -1,
		Auth:           AuthConfig{ClientCAFile: p.caFile},
		Pods:           fakePods{},
		ManifestErrors: fakeErrors{},
		Metrics:        http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}),
		Stats:          func() Stats { return fakeStats{} },
		Logs:           logs,
		Running:        fakeRunning{},
		Configz:        struct{}{},
		// A runtime that has not answered yet.
		Stream: StreamConfig{Targets: fakeTargets{}, Runtime: func() StreamRuntime { return nil }},
	}
	admin := p.issue(t, "admin", nil, x509.ExtKeyUsageClientAuth)
	readOnly := []string{"/pods", "/healthz", "/metrics", "/stats/summary", "/metrics/cadvisor"}
	authenticated := []string{"/manifests/errors"}
	debugging := []string{"/containerLogs/default/web/app", "/runningpods/", "/configz", "/debug/pprof/", "/debug/pprof/cmdline"}
	for _, debuggingOn := range []bool{true, false} {
		cfg.EnableDebuggingHandlers = debuggingOn
		ts := serve(t, cfg, p)
		port, sock := ts.tlsClient(admin), ts.viaSocket()
		expect := func(c client, url string, want int) {
			t.Helper()
			if code, body := c.get(t, url); code != want {
				t.Errorf("debugging handlers %v: %s: HTTP %d, want %d: %.200s", debuggingOn, url, code, want, body)
			}
		}
		for _, path := range readOnly {
			expect(plain(), ts.readOnly+path, 200)
			expect(port, ts.port+path, 200)
			expect(sock, "http://localhost"+path, 200)
		}
		for _, path := range authenticated {
			expect(plain(), ts.readOnly+path, 404)
			expect(port, ts.port+path, 200)
			expect(sock, "http://localhost"+path, 200)
		}
		for _, path := range debugging {
			expect(plain(), ts.readOnly+path, 404)
			if debuggingOn {
				expect(port, ts.port+path, 200)
			} else {
				expect(port, ts.port+path, 405)
			}
			expect(sock, "http://localhost"+path, 200)
		}
		// The streaming endpoints are debugging handlers too. Reached, they
		// answer what their handler answers to a request without upgrade
		// (400) or, for /run, that the runtime has not answered (503).
		for path, reached := range map[string]int{
			"/exec/default/web/app?command=ls": 400,
			"/attach/default/web/app":          400,
			"/portForward/default/web":         400,
			"/run/default/web/app?cmd=ls":      503,
		} {
			post := func(c client, url string, want int) {
				t.Helper()
				if code, body := c.do(t, http.MethodPost, url); code != want {
					t.Errorf("debugging handlers %v: POST %s: HTTP %d, want %d: %.200s", debuggingOn, url, code, want, body)
				}
			}
			post(plain(), ts.readOnly+path, 404)
			if debuggingOn {
				post(port, ts.port+path, reached)
			} else {
				post(port, ts.port+path, 405)
			}
			post(sock, "http://localhost"+path, reached)
		}
	}
}

// The kubelet port: 401 without credentials, 403 when the apiserver's
// SubjectAccessReview does not allow (with the kubelet's message), the
// fall-back from nodes/pods to nodes/proxy, and 500 when the apiserver
// cannot tell.
func TestKubeletPortAuthentication(t *testing.T) {
	p := newPKI(t)
	rv := newReviews()
	rv.tokens["sa-token"] = "system:serviceaccount:ns:reader"
	rv.allowed["alice"] = []string{"get pods", "get stats"}
	rv.allowed["bob"] = []string{"get proxy"}
	rv.allowed["system:serviceaccount:ns:reader"] = []string{"get healthz"}
	ts := serve(t, Config{
		NodeName: "n1",
		Port:     -1,
		Auth: AuthConfig{
			ClientCAFile:         p.caFile,
			TokenReviews:         rv.client.AuthenticationV1().TokenReviews(),
			SubjectAccessReviews: rv.client.AuthorizationV1().SubjectAccessReviews(),
		},
		EnableDebuggingHandlers: true,
		Pods:                    fakePods{},
		Logs:                    &fakeLogs{path: "/nonexistent"},
		Stats:                   func() Stats { return fakeStats{} },
	}, p)
	alice := ts.tlsClient(p.issue(t, "alice", []string{"devs"}, x509.ExtKeyUsageClientAuth))
	bob := ts.tlsClient(p.issue(t, "bob", nil, x509.ExtKeyUsageClientAuth))
	tests := []struct {
		name     string
		c        client
		path     string
		wantCode int
		wantBody string
	}{
		{"no credentials", ts.tlsClient(), "/pods", 401, "Unauthorized"},
		{"unknown token", ts.tlsClient().withToken("guess"), "/pods", 401, "Unauthorized"},
		{"certificate of another CA", ts.tlsClient(newPKI(t).issue(t, "eve", nil, x509.ExtKeyUsageClientAuth)), "/pods", 401, "Unauthorized"},
		{"nodes/pods allows /pods", alice, "/pods", 200, "PodList"},
		{"nodes/stats allows /stats/summary", alice, "/stats/summary", 200, "node"},
		{"logs need nodes/proxy", alice, "/containerLogs/default/web/app", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])"},
		{"/healthz tries healthz, then proxy", alice, "/healthz", 403, "subresource(s)=[healthz proxy]"},
		{"nodes/proxy is the fall-back for /pods", bob, "/pods", 200, "PodList"},
		{"nodes/proxy does not give stats", bob, "/stats/summary", 403, "subresource(s)=[stats]"},
		{"a service account's token", ts.tlsClient().withToken("sa-token"), "/healthz", 200, "ok"},
		{"a service account without nodes/pods", ts.tlsClient().withToken("sa-token"), "/pods", 403, "user=system:serviceaccount:ns:reader"},
		// ServeMux cleans the path by redirecting: the stats permission
		// never reaches the logs.
		{"a path that climbs out of /stats/", alice, "/stats/../containerLogs/default/web/app", 403, "Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := tt.c.get(t, ts.port+tt.path)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("HTTP %d %q; want %d with %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	rv.fail.Store(true)
	if code, body := bob.get(t, ts.port+"/runningpods/"); code != 500 || !strings.Contains(body, "Authorization error (user=bob") {
		t.Errorf("with the apiserver down: %d %q; want 500", code, body)
	}
	if code, _ := plain().get(t, strings.Replace(ts.port, "https:", "http:", 1)+"/pods"); code == 200 {
		t.Error("plain HTTP served the pods on the kubelet port")
	}
}

// The self-signed certificate is made once and kept: a restart serves
// the same one; an expired one is replaced.
func TestSelfSignedCertificate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	clk := clocktesting.NewFakeClock(time.Now())
	hosts := []string{"n1", "10.0.0.7", "localhost", "127.0.0.1"}
	load := func() *x509.Certificate {
		t.Helper()
		src, err := TLS{CertDir: dir, Hosts: hosts}.certificateSource(klog.Background(), clk)
		if err != nil {
			t.Fatal(err)
		}
		return src().Leaf
	}
	first := load()
	if len(first.DNSNames) != 2 || first.DNSNames[0] != "n1" || len(first.IPAddresses) != 2 || !first.IPAddresses[0].Equal(net.ParseIP("10.0.0.7")) {
		t.Errorf("names %v, addresses %v", first.DNSNames, first.IPAddresses)
	}
	if got := first.NotAfter.Sub(first.NotBefore); got != selfSignedLifetime {
		t.Errorf("lifetime %v, want %v", got, selfSignedLifetime)
	}
	if fi, err := os.Stat(filepath.Join(dir, selfSignedKey)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v; want mode 0600", fi, err)
	}
	if again := load(); !again.Equal(first) {
		t.Error("a restart made a new self-signed certificate")
	}
	clk.Step(selfSignedLifetime)
	if renewed := load(); renewed.Equal(first) {
		t.Error("the expired self-signed certificate is kept")
	}
	if err := os.WriteFile(filepath.Join(dir, selfSignedCert), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (TLS{CertDir: dir, Hosts: hosts}).certificateSource(klog.Background(), clk); err == nil || !strings.Contains(err.Error(), "remove both") {
		t.Errorf("a damaged certificate: %v; want an error saying what to do", err)
	}
}

// With a rotating certificate, handshakes fail until one is issued.
func TestRotatingCertificate(t *testing.T) {
	p := newPKI(t)
	var current *tls.Certificate
	ts := serve(t, Config{Port: -1, Auth: AuthConfig{ClientCAFile: p.caFile}, TLS: TLS{Rotating: func() *tls.Certificate { return current }}, Pods: fakePods{}}, p)
	admin := ts.tlsClient(p.issue(t, "admin", nil, x509.ExtKeyUsageClientAuth))
	if _, err := admin.http.Get(ts.port + "/pods"); err == nil { //nolint:noctx // test
		t.Error("a handshake succeeded before a certificate was issued")
	}
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	current = &cert
	if code, _ := admin.get(t, ts.port+"/pods"); code != 200 {
		t.Errorf("once issued: HTTP %d", code)
	}
}

func TestListenErrors(t *testing.T) {
	if _, err := Listen(context.Background(), Config{Port: freePort(t), Address: "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "no way to authenticate") {
		t.Errorf("kubelet port without authentication: %v", err)
	}
	ts := serve(t, Config{HealthzPort: -1, Pods: fakePods{}}, nil)
	if ts.readOnly != "" || ts.port != "" || ts.healthz == "" {
		t.Fatalf("ports %q %q %q: want only healthz served", ts.port, ts.readOnly, ts.healthz)
	}
	port, _ := strconv.Atoi(ts.healthz[strings.LastIndexByte(ts.healthz, ':')+1:])
	_, err := Listen(context.Background(), Config{Address: "127.0.0.1", ReadOnlyPort: port, Pods: fakePods{}})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("Listen on a port in use: %v, want an error naming the port", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
