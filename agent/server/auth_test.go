package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestAuthValidate(t *testing.T) {
	full := Auth{CertFile: "c", KeyFile: "k", TokenAuthFile: "t"}
	tests := []struct {
		address string
		auth    Auth
		want    string
	}{
		{"127.0.0.1", Auth{}, ""},
		{"::1", Auth{}, ""},
		{"localhost", Auth{}, ""},
		{"0.0.0.0", full, ""},
		{"0.0.0.0", Auth{}, "--tls-cert-file and --tls-private-key-file, and --client-ca-file or --token-auth-file"},
		{"10.0.0.1", Auth{CertFile: "c", KeyFile: "k"}, "--client-ca-file or --token-auth-file"},
		{"10.0.0.1", Auth{ClientCAFile: "ca"}, "--tls-cert-file and --tls-private-key-file"},
	}
	for _, tt := range tests {
		err := tt.auth.Validate(tt.address)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%q, %+v) = %v; want %q", tt.address, tt.auth, err, tt.want)
		}
	}
}

func TestReadTokensErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"# comment\nabc,user,1\n\nbad-line\n": "tokens.csv:4: want token,user,uid",
		"":                                    "no tokens",
		"t,\"unterminated\n":                  "tokens.csv:1",
	} {
		p := filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readTokens(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readTokens(%q) = %v; want %q", content, err, want)
		}
	}
}

// pki is a CA with a server and a client certificate, in files.
type pki struct {
	dir                       string
	caFile, certFile, keyFile string
	client                    tls.Certificate
	pool                      *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	issue := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: fmt.Sprint("leaf-", serial)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(p.dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := issue(2, x509.ExtKeyUsageServerAuth)
	p.certFile = write("server.pem", "CERTIFICATE", srvDER)
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	p.keyFile = write("server-key.pem", "EC PRIVATE KEY", keyDER)
	cliDER, cliKey := issue(3, x509.ExtKeyUsageClientAuth)
	p.client = tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
	return p
}

type onePod struct{}

func (onePod) PodsWithStatus() []*v1.Pod { return []*v1.Pod{{}} }

func TestAuthOffLoopback(t *testing.T) {
	p := newPKI(t)
	tokens := filepath.Join(p.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("s3cret,admin,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv, err := Listen(Config{Address: "0.0.0.0", ReadOnlyPort: port, Pods: onePod{},
		Auth: Auth{CertFile: p.certFile, KeyFile: p.keyFile, ClientCAFile: p.caFile, TokenAuthFile: tokens}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	url := fmt.Sprintf("https://127.0.0.1:%d/pods", port)
	get := func(cert *tls.Certificate, token string) (int, error) {
		tc := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 5 * time.Second}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, tc := range []struct {
		name  string
		cert  *tls.Certificate
		token string
		want  int
	}{
		{"nothing", nil, "", http.StatusUnauthorized},
		{"wrong token", nil, "guess", http.StatusUnauthorized},
		{"token", nil, "s3cret", http.StatusOK},
		{"client certificate", &p.client, "", http.StatusOK},
	} {
		if code, err := get(tc.cert, tc.token); err != nil || code != tc.want {
			t.Errorf("%s: HTTP %d, %v; want %d", tc.name, code, err, tc.want)
		}
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", port)) //nolint:noctx // test
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served the pods off loopback")
		}
	}
}
