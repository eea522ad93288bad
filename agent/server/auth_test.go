package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// The attributes are the kubelet v1.36's: fine-grained subresources for
// /pods, /runningpods/, /healthz and /configz with nodes/proxy as a
// fall-back, stats, metrics and log on their own, proxy for the rest.
func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/metrics/probes", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/ns/pod/c", "create", []string{"checkpoint"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/containerLogs/ns/pod/c", "get", []string{"proxy"}},
		{"POST", "/exec/ns/pod/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/pod/c", "get", []string{"proxy"}},
		{"POST", "/attach/ns/pod/c", "create", []string{"proxy"}},
		{"POST", "/portForward/ns/pod", "create", []string{"proxy"}},
		{"POST", "/run/ns/pod/c", "create", []string{"proxy"}},
		{"GET", "/debug/pprof/heap", "get", []string{"proxy"}},
		{"GET", "/manifests/errors", "get", []string{"proxy"}},
		{"PUT", "/debug/flags/v", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		// As in the kubelet, no verb for the other methods.
		{"HEAD", "/healthz", "", []string{"healthz", "proxy"}},
	}
	u := &User{Name: "alice"}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.path, nil)
		attrs := requestAttributes(u, "n1", r)
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.Subresource)
			if a.Verb != tt.verb || a.Name != "n1" || a.User != u || a.Path != tt.path {
				t.Errorf("%s %s: %+v; want verb %q on node n1", tt.method, tt.path, a, tt.verb)
			}
		}
		if !slices.Equal(subs, tt.subresources) {
			t.Errorf("%s %s: subresources %v, want %v", tt.method, tt.path, subs, tt.subresources)
		}
	}
}

// pki is a CA with a server and client certificates, in files.
type pki struct {
	dir                       string
	caFile, certFile, keyFile string
	caKey                     *ecdsa.PrivateKey
	ca                        *x509.Certificate
	pool                      *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	srv := p.issue(t, "server", nil, x509.ExtKeyUsageServerAuth)
	p.certFile = p.write(t, "server.pem", "CERTIFICATE", srv.Certificate[0])
	keyDER, _ := x509.MarshalECPrivateKey(srv.PrivateKey.(*ecdsa.PrivateKey))
	p.keyFile = p.write(t, "server-key.pem", "EC PRIVATE KEY", keyDER)
	return p
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue makes a certificate of the CA for cn in groups, for usage.
func (p *pki) issue(t *testing.T, cn string, groups []string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: groups}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsRequest is a request as the server sees it after a handshake with
// certs.
func tlsRequest(certs ...tls.Certificate) *http.Request {
	r := httptest.NewRequest("GET", "/pods", nil)
	r.TLS = &tls.ConnectionState{}
	for _, c := range certs {
		leaf, _ := x509.ParseCertificate(c.Certificate[0])
		r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, leaf)
	}
	return r
}

// fakeTokens accepts one token.
type fakeTokens struct{ token, user string }

func (f fakeTokens) checkToken(_ context.Context, token string) (*User, bool, error) {
	if token == f.token {
		return &User{Name: f.user, Groups: []string{"team"}}, true, nil
	}
	return nil, false, nil
}

func TestAuthenticate(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	alice := p.issue(t, "alice", []string{"devs", "prod"}, x509.ExtKeyUsageClientAuth)
	serverOnly := p.issue(t, "mallory", nil, x509.ExtKeyUsageServerAuth)
	stranger := other.issue(t, "eve", nil, x509.ExtKeyUsageClientAuth)
	withToken := func(r *http.Request, token string) *http.Request {
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
	webSocket := func(protocols ...string) *http.Request {
		r := httptest.NewRequest("GET", "/exec/ns/pod/c", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Sec-WebSocket-Protocol", strings.Join(protocols, ", "))
		return r
	}
	bearerProtocol := bearerProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte("s3cret"))
	strict := &authenticator{clientCAs: p.pool, tokens: []tokenChecker{fakeTokens{"s3cret", "bob"}}, clock: clock.RealClock{}}
	anonymous := &authenticator{clientCAs: p.pool, tokens: []tokenChecker{fakeTokens{"s3cret", "bob"}}, anonymous: true, clock: clock.RealClock{}}
	tests := []struct {
		name    string
		a       *authenticator
		r       *http.Request
		want    *User
		wantErr string
	}{
		{"client certificate", strict, tlsRequest(alice), &User{Name: "alice", Groups: []string{"devs", "prod", "system:authenticated"}}, ""},
		{"certificate of another CA", anonymous, tlsRequest(stranger), nil, "certificate signed by unknown authority"},
		{"certificate not for clients", anonymous, tlsRequest(serverOnly), nil, "incompatible key usage"},
		{"another CA's certificate and a good token", strict, withToken(tlsRequest(stranger), "s3cret"), &User{Name: "bob", Groups: []string{"team", "system:authenticated"}}, ""},
		{"bearer token", strict, withToken(httptest.NewRequest("GET", "/pods", nil), "s3cret"), &User{Name: "bob", Groups: []string{"team", "system:authenticated"}}, ""},
		{"unknown token, anonymous allowed", anonymous, withToken(httptest.NewRequest("GET", "/pods", nil), "guess"), nil, "invalid bearer token"},
		{"WebSocket bearer subprotocol", strict, webSocket("v5.channel.k8s.io", bearerProtocol), &User{Name: "bob", Groups: []string{"team", "system:authenticated"}}, ""},
		{"two bearer subprotocols", strict, webSocket(bearerProtocol, bearerProtocol), nil, "more than one"},
		{"nothing, anonymous allowed", anonymous, httptest.NewRequest("GET", "/pods", nil), &User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, ""},
		{"nothing", strict, httptest.NewRequest("GET", "/pods", nil), nil, "no credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := tt.a.authenticate(tt.r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("authenticate = %+v, %v; want an error saying %q", u, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(u, tt.want) {
				t.Fatalf("authenticate = %+v, %v; want %+v", u, err, tt.want)
			}
		})
	}
	// An accepted token goes no further than authentication.
	r := webSocket("v5.channel.k8s.io", bearerProtocol)
	if _, err := strict.authenticate(r); err != nil || r.Header.Get("Sec-WebSocket-Protocol") != "v5.channel.k8s.io" {
		t.Errorf("subprotocols after authentication: %q, %v; want only v5.channel.k8s.io", r.Header.Get("Sec-WebSocket-Protocol"), err)
	}
	r = withToken(httptest.NewRequest("GET", "/pods", nil), "s3cret")
	if _, err := strict.authenticate(r); err != nil || r.Header.Get("Authorization") != "" {
		t.Errorf("Authorization after authentication: %q, %v; want it removed", r.Header.Get("Authorization"), err)
	}
}

func TestReadTokens(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(p, []byte("# comment\ns3cret,bob,42,\"devs,ops\"\nother,carol,43\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := readTokens(p)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, _ := tokens.checkToken(context.Background(), "s3cret"); !ok || !reflect.DeepEqual(u, &User{Name: "bob", UID: "42", Groups: []string{"devs", "ops"}}) {
		t.Errorf("s3cret: %+v %v", u, ok)
	}
	if _, ok, err := tokens.checkToken(context.Background(), "guess"); ok || err != nil {
		t.Errorf("unknown token: %v %v; want not accepted, no error", ok, err)
	}
	for content, want := range map[string]string{
		"# comment\nabc,user,1\n\nbad-line\n": "tokens.csv:4: want token,user,uid",
		"":                                    "no tokens",
		"t,\"unterminated\n":                  "tokens.csv:1",
	} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readTokens(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readTokens(%q) = %v; want %q", content, err, want)
		}
	}
}

// reviews is a fake apiserver's TokenReview and SubjectAccessReview
// endpoints, counting calls: tokens it knows, and the subresources each
// user may get.
type reviews struct {
	client   *fake.Clientset
	calls    atomic.Int32
	fail     atomic.Bool
	tokens   map[string]string
	allowed  map[string][]string
	lastSpec atomic.Pointer[authorizationv1.SubjectAccessReviewSpec]
}

func newReviews() *reviews {
	r := &reviews{client: fake.NewClientset(), tokens: map[string]string{}, allowed: map[string][]string{}}
	r.client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.calls.Add(1)
		if r.fail.Load() {
			return true, nil, errors.New("apiserver unreachable")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if name, ok := r.tokens[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: name, UID: "u-" + name, Groups: []string{"system:serviceaccounts"}}}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "token expired"}
		}
		return true, tr, nil
	})
	r.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.calls.Add(1)
		if r.fail.Load() {
			return true, nil, errors.New("apiserver unreachable")
		}
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		r.lastSpec.Store(&sar.Spec)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = ra != nil && ra.Resource == "nodes" && ra.Name == "n1" && ra.Version == "v1" && slices.Contains(r.allowed[sar.Spec.User], ra.Verb+" "+ra.Subresource)
		return true, sar, nil
	})
	return r
}

// TokenReview answers are kept for the TTL, accepted or not; a failed
// call is retried and not kept.
func TestTokenReviewCache(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	rv := newReviews()
	rv.tokens["sa-token"] = "system:serviceaccount:ns:sa"
	tr := &tokenReviews{webhook: newWebhook(clk), client: rv.client.AuthenticationV1().TokenReviews(), ttl: 2 * time.Minute}
	tr.backoff = 0
	ctx := context.Background()
	check := func(token string, wantOK bool, wantCalls int32) {
		t.Helper()
		u, ok, err := tr.checkToken(ctx, token)
		if ok != wantOK || rv.calls.Load() != wantCalls {
			t.Fatalf("checkToken(%s) = %+v, %v, %v after %d calls; want %v after %d", token, u, ok, err, rv.calls.Load(), wantOK, wantCalls)
		}
		if ok && (u.Name != "system:serviceaccount:ns:sa" || u.UID != "u-system:serviceaccount:ns:sa") {
			t.Fatalf("user %+v", u)
		}
		if !ok && !rv.fail.Load() && (err == nil || !strings.Contains(err.Error(), "token expired")) {
			t.Fatalf("a refused token: %v, want the review's error", err)
		}
	}
	check("sa-token", true, 1)
	check("sa-token", true, 1)
	check("bad-token", false, 2)
	check("bad-token", false, 2)
	clk.Step(2*time.Minute + time.Second)
	check("sa-token", true, 3)
	check("bad-token", false, 4)

	rv.fail.Store(true)
	if _, ok, err := tr.checkToken(ctx, "new-token"); ok || err == nil || rv.calls.Load() != 4+webhookAttempts {
		t.Fatalf("with the apiserver down: %v, %v after %d calls; want an error after %d attempts", ok, err, rv.calls.Load(), webhookAttempts)
	}
	rv.fail.Store(false)
	rv.tokens["new-token"] = "system:serviceaccount:ns:sa"
	check("new-token", true, 5+webhookAttempts)
}

// A SubjectAccessReview that allows is kept 5 minutes, one that does not
// 30 seconds; the review names the user, its groups and the node's
// subresource.
func TestSubjectAccessReviewCache(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	rv := newReviews()
	rv.allowed["alice"] = []string{"get pods"}
	ar := &accessReviews{webhook: newWebhook(clk), client: rv.client.AuthorizationV1().SubjectAccessReviews(), allowedTTL: 5 * time.Minute, deniedTTL: 30 * time.Second}
	ar.backoff = 0
	alice := &User{Name: "alice", UID: "1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a"}}}
	ctx := context.Background()
	authorize := func(sub string, want bool, wantCalls int32) {
		t.Helper()
		allowed, err := ar.authorize(ctx, attributes{User: alice, Verb: "get", Subresource: sub, Name: "n1"})
		if err != nil || allowed != want || rv.calls.Load() != wantCalls {
			t.Fatalf("authorize %s = %v, %v after %d calls; want %v after %d", sub, allowed, err, rv.calls.Load(), want, wantCalls)
		}
	}
	authorize("pods", true, 1)
	spec := rv.lastSpec.Load()
	if spec.User != "alice" || spec.UID != "1" || !slices.Equal(spec.Groups, alice.Groups) || !slices.Equal(spec.Extra["scopes"], []string{"a"}) ||
		*spec.ResourceAttributes != (authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "pods", Name: "n1"}) {
		t.Errorf("review spec %+v %+v", spec, spec.ResourceAttributes)
	}
	authorize("pods", true, 1)
	authorize("proxy", false, 2)
	authorize("proxy", false, 2)
	clk.Step(31 * time.Second)
	authorize("pods", true, 2)
	authorize("proxy", false, 3)
	clk.Step(5 * time.Minute)
	authorize("pods", true, 4)

	rv.fail.Store(true)
	if _, err := ar.authorize(ctx, attributes{User: alice, Verb: "get", Subresource: "stats", Name: "n1"}); err == nil {
		t.Error("with the apiserver down: no error")
	}
}
