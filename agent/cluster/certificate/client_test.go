package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// creator counts the CSRs created through it: which credentials asked.
type creator struct {
	csrClient
	mu      sync.Mutex
	created int
}

func (c *creator) Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	c.mu.Lock()
	c.created++
	c.mu.Unlock()
	return c.csrClient.Create(ctx, csr, opts)
}

func (c *creator) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.created
}

// clientManager is a client-certificate Manager of node n1 whose
// bootstrap credentials and own credentials are counted apart; it renews
// at 70% of the lifetime.
func (s *signer) clientManager(dir string, rotate bool, bootstrap *creator) *Manager {
	cfg := Config{Kind: Client, NodeName: "n1", Dir: dir, Rotate: rotate, Clock: s.clock}
	if bootstrap != nil {
		cfg.Bootstrap = bootstrap
	}
	m := New(cfg)
	m.jitter = func() float64 { return 0 }
	return m
}

// runWith runs m with node as the node's own client until the test ends.
func runWith(t *testing.T, m *Manager, node csrClient) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx, node); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (s *signer) creator() *creator {
	return &creator{csrClient: s.client.CertificatesV1().CertificateSigningRequests()}
}

// pair is a client certificate for cn in org, signed by the cluster CA,
// with its key, valid for an hour.
func (s *signer) pair(t *testing.T, cn, org string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := s.clock.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{org}},
		NotBefore: now, NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, &key.PublicKey, s.caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func isReady(m *Manager) bool {
	select {
	case <-m.Ready():
		return true
	default:
		return false
	}
}

// A bootstrap: with no certificate, the bootstrap credentials ask for a
// kube-apiserver-client-kubelet certificate as the kubelet's request
// makes it; it is kept as kubelet-client-current.pem, a link to a dated
// file (0600), and the next agent uses it at once. The renewal at 70% of
// the lifetime uses the node's own credentials, and a new dated file.
func TestClientBootstrapAndRotation(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s := newSigner(t, clk)
	s.life = 10 * time.Minute
	dir := filepath.Join(t.TempDir(), "pki")
	boot, node := s.creator(), s.creator()
	m := s.clientManager(dir, true, boot)
	if m.Current() != nil || isReady(m) {
		t.Fatal("a certificate before any was issued")
	}
	runWith(t, m, node)
	csr := s.pending(1)
	req := checkRequest(t, csr, "kubernetes.io/kube-apiserver-client-kubelet", certificatesv1.UsageClientAuth)
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) != 0 {
		t.Errorf("CSR SANs %v %v; want none", req.DNSNames, req.IPAddresses)
	}
	if boot.count() != 1 || node.count() != 0 {
		t.Errorf("requests: %d with the bootstrap credentials, %d with the node's; want 1, 0", boot.count(), node.count())
	}
	first := s.issue(csr)
	waitCurrent(t, m, first)
	if !isReady(m) {
		t.Error("Ready not closed with a certificate")
	}
	current := filepath.Join(dir, ClientCurrentFile)
	target, err := os.Readlink(current)
	if want := filepath.Join(dir, "kubelet-client-2026-03-04-05-06-07.pem"); err != nil || target != want {
		t.Errorf("%s links to %q (%v), want %s", current, target, err, want)
	}
	if fi, err := os.Stat(current); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kept certificate: %v, %v; want mode 0600", fi, err)
	}

	polltest.Until(t, 10*time.Second, "the manager waiting for the renewal time", func() (bool, string) { return clk.Waiters() == 1, "" })
	clk.Step(7 * time.Minute)
	second := s.issue(s.pending(2))
	waitCurrent(t, m, second)
	if boot.count() != 1 || node.count() != 1 {
		t.Errorf("requests: %d with the bootstrap credentials, %d with the node's; want 1, 1", boot.count(), node.count())
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"kubelet-client-2026-03-04-05-06-07.pem", "kubelet-client-2026-03-04-05-13-07.pem", ClientCurrentFile}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}

	restarted := s.clientManager(dir, true, boot)
	if c := restarted.Current(); c == nil || c.Leaf.SerialNumber.Cmp(second.SerialNumber) != 0 || !isReady(restarted) {
		t.Errorf("after a restart: %v; want the kept certificate at once", c)
	}
}

// Without rotation, a certificate is kept until it expires; then the
// bootstrap credentials ask for a new one.
func TestClientWithoutRotation(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	s.life = 10 * time.Minute
	boot, node := s.creator(), s.creator()
	m := s.clientManager(t.TempDir(), false, boot)
	runWith(t, m, node)
	first := s.issue(s.pending(1))
	waitCurrent(t, m, first)
	polltest.Until(t, 10*time.Second, "the manager waiting for the expiry", func() (bool, string) { return clk.Waiters() == 1, "" })
	clk.Step(10*time.Minute - time.Second)
	if n := s.requests(); n != 1 {
		t.Fatalf("%d requests before the certificate expired, want 1", n)
	}
	clk.Step(time.Second)
	csr := s.pending(2)
	if m.Current() != nil {
		t.Error("an expired certificate is in use")
	}
	waitCurrent(t, m, s.issue(csr))
	if boot.count() != 2 || node.count() != 0 {
		t.Errorf("requests: %d with the bootstrap credentials, %d with the node's; want 2, 0", boot.count(), node.count())
	}
}

// The certificate a kubeconfig names is used when the directory keeps
// none; one not for this node (an administrator's) is replaced at once,
// with its own credentials. A kept certificate wins over it.
func TestClientInitialCertificate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	admin := s.pair(t, "kubernetes-admin", "system:masters")
	node := s.creator()
	m := New(Config{Kind: Client, NodeName: "n1", Dir: t.TempDir(), Initial: admin, Rotate: true, Clock: clk})
	if c := m.Current(); c != admin || !isReady(m) {
		t.Fatalf("current %v; want the kubeconfig's", c)
	}
	runWith(t, m, node)
	mine := s.issue(s.pending(1))
	waitCurrent(t, m, mine)
	if node.count() != 1 {
		t.Errorf("%d requests with the current credentials, want 1", node.count())
	}

	again := New(Config{Kind: Client, NodeName: "n1", Dir: m.cfg.Dir, Initial: admin, Rotate: true, Clock: clk})
	if c := again.Current(); c == nil || c.Leaf.SerialNumber.Cmp(mine.SerialNumber) != 0 {
		t.Errorf("after a restart %v; want the kept certificate, not the kubeconfig's", c)
	}
}

// A certificate that does not parse in the directory is reported and
// replaced.
func TestClientBadKeptCertificate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ClientCurrentFile), []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	boot := s.creator()
	m := s.clientManager(dir, true, boot)
	if m.Current() != nil {
		t.Fatal("a broken certificate is in use")
	}
	runWith(t, m, s.creator())
	waitCurrent(t, m, s.issue(s.pending(1)))
	if fi, err := os.Lstat(filepath.Join(dir, ClientCurrentFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is not a link to the new certificate: %v, %v", ClientCurrentFile, fi, err)
	}
	if !strings.HasPrefix(m.CurrentPath(), dir) {
		t.Errorf("CurrentPath %s outside %s", m.CurrentPath(), dir)
	}
}
