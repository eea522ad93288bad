package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/cluster/certificate"
)

// credFiles writes the files a node's credentials come from, in a temp
// dir: a CA, certificates it signs, kubeconfigs.
type credFiles struct {
	t     *testing.T
	dir   string
	now   time.Time
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	// caFile is the CA's certificate.
	caFile string
	serial int64
}

func newCredFiles(t *testing.T, now time.Time) *credFiles {
	t.Helper()
	f := &credFiles{t: t, dir: t.TempDir(), now: now}
	f.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &f.caKey.PublicKey, f.caKey)
	if err != nil {
		t.Fatal(err)
	}
	f.ca, _ = x509.ParseCertificate(der)
	f.caFile = f.write("ca.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return f
}

func (f *credFiles) write(name string, data []byte) string {
	f.t.Helper()
	path := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// cert writes a client certificate for node n1 valid until notAfter, and
// its key: as name.crt and name.key, and both in name.pem.
func (f *credFiles) cert(name string, notAfter time.Time) (certFile, keyFile, pair string) {
	f.t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(f.serial + 1), Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		NotBefore: f.now.Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca, &key.PublicKey, f.caKey)
	if err != nil {
		f.t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return f.write(name+".crt", certPEM), f.write(name+".key", keyPEM), f.write(name+".pem", append(certPEM, keyPEM...))
}

// kubeconfig writes a kubeconfig for server whose user has the fields
// of keyValues (client-certificate, path, token, value, ...).
func (f *credFiles) kubeconfig(name, server string, keyValues ...string) string {
	var user []string
	for i := 0; i+1 < len(keyValues); i += 2 {
		user = append(user, keyValues[i]+": "+strconv.Quote(keyValues[i+1]))
	}
	return f.write(name, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: `+strconv.Quote(server)+`, certificate-authority: `+strconv.Quote(f.caFile)+`}
users:
- name: u
  user: {`+strings.Join(user, ", ")+`}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`))
}

func (f *credFiles) config(kubeconfig, bootstrap string, rotate bool) Config {
	c := Config{NodeName: "n1", CertDir: filepath.Join(f.dir, "pki"), Clock: clocktesting.NewFakeClock(f.now)}
	c.Kubeconfig, c.BootstrapKubeconfig, c.RotateCertificates = kubeconfig, bootstrap, rotate
	return c
}

// The node's credentials as the kubelet decides them, from --kubeconfig,
// --bootstrap-kubeconfig, --rotate-certificates and what --cert-dir keeps.
func TestLoadCredentials(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const server, bootServer = "https://10.0.0.1:6443", "https://10.0.0.2:6443"

	t.Run("a kubeconfig as it stands", func(t *testing.T) {
		f := newCredFiles(t, now)
		crt, key, _ := f.cert("node", now.Add(time.Hour))
		creds, err := loadCredentials(f.config(f.kubeconfig("kubeconfig", server, "client-certificate", crt, "client-key", key), "", false))
		if err != nil {
			t.Fatal(err)
		}
		if creds.manager != nil || creds.rest.CertFile != crt || creds.rest.Host != server {
			t.Errorf("manager %v, cert %q, host %q; want none, %s, %s", creds.manager, creds.rest.CertFile, creds.rest.Host, crt, server)
		}
	})
	t.Run("a token kubeconfig as it stands", func(t *testing.T) {
		f := newCredFiles(t, now)
		creds, err := loadCredentials(f.config(f.kubeconfig("kubeconfig", server, "token", "abc"), "", false))
		if err != nil || creds.rest.BearerToken != "abc" {
			t.Fatalf("%v, token %q", err, creds.rest.BearerToken)
		}
	})

	errorCases := []struct {
		name string
		// setup returns the config and the strings the error must hold.
		setup func(f *credFiles) (Config, []string)
	}{
		{"an expired certificate and no bootstrap kubeconfig", func(f *credFiles) (Config, []string) {
			crt, key, _ := f.cert("node", now.Add(-time.Minute))
			kc := f.kubeconfig("kubeconfig", server, "client-certificate", crt, "client-key", key)
			return f.config(kc, "", false), []string{"--kubeconfig " + kc, crt, "expired at 2026-01-02T03:03:05Z", "--bootstrap-kubeconfig"}
		}},
		{"a missing certificate and no bootstrap kubeconfig", func(f *credFiles) (Config, []string) {
			missing := filepath.Join(f.dir, "gone.crt")
			kc := f.kubeconfig("kubeconfig", server, "client-certificate", missing, "client-key", missing)
			return f.config(kc, "", false), []string{"--kubeconfig " + kc, missing, "no such file"}
		}},
		{"rotation with an expired certificate, nothing kept, no bootstrap kubeconfig", func(f *credFiles) (Config, []string) {
			crt, key, _ := f.cert("node", now.Add(-time.Minute))
			kc := f.kubeconfig("kubeconfig", server, "client-certificate", crt, "client-key", key)
			cfg := f.config(kc, "", true)
			return cfg, []string{"--kubeconfig " + kc, crt, "expired", filepath.Join(cfg.CertDir, certificate.ClientCurrentFile), "--bootstrap-kubeconfig"}
		}},
		{"no kubeconfig and a missing bootstrap kubeconfig", func(f *credFiles) (Config, []string) {
			kc, boot := filepath.Join(f.dir, "kubeconfig"), filepath.Join(f.dir, "bootstrap")
			return f.config(kc, boot, false), []string{"--bootstrap-kubeconfig " + boot, "--kubeconfig " + kc}
		}},
	}
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			cfg, want := tt.setup(newCredFiles(t, now))
			_, err := loadCredentials(cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}

	t.Run("a bootstrap on a fresh node writes the kubeconfig", func(t *testing.T) {
		f := newCredFiles(t, now)
		kc := filepath.Join(f.dir, "etc", "kubelet.conf")
		cfg := f.config(kc, f.kubeconfig("bootstrap", bootServer, "token", "abcdef.0123456789abcdef"), false)
		creds, err := loadCredentials(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if creds.manager == nil || creds.manager.Current() != nil {
			t.Fatalf("manager %v; want one without a certificate yet", creds.manager)
		}
		if creds.rest.Host != bootServer || creds.rest.BearerToken != "" {
			t.Errorf("client of %s with token %q; want the bootstrap kubeconfig's server and no token", creds.rest.Host, creds.rest.BearerToken)
		}
		written, err := clientcmd.LoadFromFile(kc)
		if err != nil {
			t.Fatal(err)
		}
		ctx := written.Contexts[written.CurrentContext]
		pem := filepath.Join(cfg.CertDir, certificate.ClientCurrentFile)
		if c, u := written.Clusters[ctx.Cluster], written.AuthInfos[ctx.AuthInfo]; c.Server != bootServer || c.CertificateAuthority != f.caFile ||
			u.ClientCertificate != pem || u.ClientKey != pem || u.Token != "" {
			t.Errorf("written kubeconfig: cluster %+v, user %+v; want %s, CA %s, certificate and key %s", c, u, bootServer, f.caFile, pem)
		}
		if fi, err := os.Stat(kc); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig %v, %v; want mode 0600", fi, err)
		}
	})
	t.Run("a valid kubeconfig needs no bootstrap kubeconfig", func(t *testing.T) {
		f := newCredFiles(t, now)
		crt, key, _ := f.cert("node", now.Add(time.Hour))
		kc := f.kubeconfig("kubeconfig", server, "client-certificate", crt, "client-key", key)
		before, _ := os.ReadFile(kc)
		creds, err := loadCredentials(f.config(kc, filepath.Join(f.dir, "removed-after-join"), true))
		if err != nil {
			t.Fatal(err)
		}
		if c := creds.manager.Current(); c == nil || c.Leaf.SerialNumber.Int64() != f.serial+1 || creds.rest.Host != server {
			t.Errorf("certificate %v, host %s; want the kubeconfig's", c, creds.rest.Host)
		}
		if after, _ := os.ReadFile(kc); string(after) != string(before) {
			t.Error("the kubeconfig was rewritten")
		}
	})
	t.Run("a kept certificate wins over an expired kubeconfig's", func(t *testing.T) {
		f := newCredFiles(t, now)
		crt, key, _ := f.cert("old", now.Add(-time.Minute))
		_, _, kept := f.cert("kept", now.Add(time.Hour))
		cfg := f.config(f.kubeconfig("kubeconfig", server, "client-certificate", crt, "client-key", key), "", true)
		if err := os.MkdirAll(cfg.CertDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(kept, filepath.Join(cfg.CertDir, certificate.ClientCurrentFile)); err != nil {
			t.Fatal(err)
		}
		creds, err := loadCredentials(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if c := creds.manager.Current(); c == nil || c.Leaf.SerialNumber.Int64() != f.serial+1 || creds.rest.Host != server {
			t.Errorf("certificate %v, host %s; want the kept one, for the kubeconfig's server", c, creds.rest.Host)
		}
	})
}
