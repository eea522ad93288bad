package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// signer is the cluster's kubelet-serving signer and the administrator
// who approves (or denies) the node's requests, on a fake apiserver.
type signer struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	caKey  *ecdsa.PrivateKey
	ca     *x509.Certificate
	life   time.Duration
	mu     sync.Mutex
	named  int
}

func newSigner(t *testing.T, clk *clocktesting.FakeClock) *signer {
	t.Helper()
	s := &signer{t: t, client: fake.NewClientset(), clock: clk, life: time.Hour}
	s.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster-ca"}, NotBefore: clk.Now().Add(-time.Hour), NotAfter: clk.Now().Add(100 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &s.caKey.PublicKey, s.caKey)
	if err != nil {
		t.Fatal(err)
	}
	s.ca, _ = x509.ParseCertificate(der)
	// The fake apiserver does not fill in generateName.
	s.client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		if csr.Name == "" {
			s.mu.Lock()
			s.named++
			csr.Name = fmt.Sprintf("%s%d", csr.GenerateName, s.named)
			s.mu.Unlock()
		}
		return false, nil, nil
	})
	return s
}

func (s *signer) manager(dir string, addresses ...v1.NodeAddress) *Manager {
	m := New(Config{Kind: Serving, NodeName: "n1", Addresses: addresses, Dir: dir, Rotate: true, Clock: s.clock})
	m.jitter = func() float64 { return 0 } // renew at 70% of the lifetime
	return m
}

// run runs m with the node's client, s's, until the test ends.
func (s *signer) run(m *Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx, s.client.CertificatesV1().CertificateSigningRequests()); close(done) }()
	s.t.Cleanup(func() { cancel(); <-done })
}

// pending waits for the n-th request and for the manager to watch it, and
// returns it.
func (s *signer) pending(n int) *certificatesv1.CertificateSigningRequest {
	s.t.Helper()
	name := fmt.Sprintf("csr-%d", n)
	var csr *certificatesv1.CertificateSigningRequest
	polltest.Until(s.t, 10*time.Second, name+" created and watched", func() (bool, string) {
		watched := slices.ContainsFunc(s.client.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == "certificatesigningrequests"
		})
		got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || !watched {
			return false, fmt.Sprintf("get: %v, watched %v", err, watched)
		}
		csr = got
		s.client.ClearActions()
		return true, ""
	})
	return csr
}

// requests counts the requests made.
func (s *signer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.named
}

// issue approves csr and signs it.
func (s *signer) issue(csr *certificatesv1.CertificateSigningRequest) *x509.Certificate {
	s.t.Helper()
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		s.t.Fatal(err)
	}
	now := s.clock.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: now, NotAfter: now.Add(s.life), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, req.PublicKey, s.caKey)
	if err != nil {
		s.t.Fatal(err)
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "Approved"}}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(context.Background(), csr, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

func (s *signer) deny(csr *certificatesv1.CertificateSigningRequest) {
	s.t.Helper()
	csr = csr.DeepCopy()
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: v1.ConditionTrue, Reason: "NotOurNode"}}
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(context.Background(), csr, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// checkRequest checks that csr is for signer, with usages digital
// signature and use, and for system:node:n1 in system:nodes, and returns
// its request.
func checkRequest(t *testing.T, csr *certificatesv1.CertificateSigningRequest, signer string, use certificatesv1.KeyUsage) *x509.CertificateRequest {
	t.Helper()
	if csr.Spec.SignerName != signer || !slices.Equal(csr.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, use}) {
		t.Errorf("CSR spec: signer %q usages %v; want %s, digital signature and %s", csr.Spec.SignerName, csr.Spec.Usages, signer, use)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		t.Fatal("the CSR's request is not PEM")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "system:node:n1" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("CSR subject %v, want system:node:n1 in system:nodes", req.Subject)
	}
	return req
}

// waitCurrent waits until m uses cert.
func waitCurrent(t *testing.T, m *Manager, cert *x509.Certificate) {
	t.Helper()
	polltest.Until(t, 10*time.Second, "the issued certificate in use", func() (bool, string) {
		c := m.Current()
		return c != nil && c.Leaf.SerialNumber.Cmp(cert.SerialNumber) == 0, fmt.Sprintf("current %v", c != nil)
	})
}

var addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.7"}, {Type: v1.NodeHostName, Address: "n1"}}

// The first certificate: a kubelet-serving CSR as the kubelet makes it,
// served once issued, kept (mode 0600) and served again at once by the
// next agent on the same directory.
func TestIssueAndKeep(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	dir := filepath.Join(t.TempDir(), "pki")
	m := s.manager(dir, addresses...)
	if m.Current() != nil {
		t.Fatal("a certificate before any was issued")
	}
	s.run(m)
	csr := s.pending(1)
	req := checkRequest(t, csr, "kubernetes.io/kubelet-serving", certificatesv1.UsageServerAuth)
	if !slices.Equal(req.DNSNames, []string{"n1"}) || len(req.IPAddresses) != 1 || !req.IPAddresses[0].Equal(net.ParseIP("10.0.0.7")) {
		t.Errorf("CSR for DNS %v, IPs %v; want n1 and 10.0.0.7", req.DNSNames, req.IPAddresses)
	}
	if m.Current() != nil {
		t.Error("a certificate while the request is pending")
	}
	cert := s.issue(csr)
	waitCurrent(t, m, cert)
	fi, err := os.Stat(filepath.Join(dir, CurrentFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept certificate: %v, %v; want mode 0600", fi, err)
	}

	restarted := s.manager(dir, addresses...)
	if c := restarted.Current(); c == nil || c.Leaf.SerialNumber.Cmp(cert.SerialNumber) != 0 {
		t.Errorf("after a restart: %v; want the kept certificate at once", c)
	}
}

// Renewal comes at 70-90% of the lifetime (70% with this jitter); the old
// certificate is served until the new one is issued. An expired
// certificate is not served.
func TestRenewal(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	s.life = 10 * time.Minute
	m := s.manager(t.TempDir(), addresses...)
	s.run(m)
	first := s.issue(s.pending(1))
	waitCurrent(t, m, first)

	polltest.Until(t, 10*time.Second, "the manager waiting for the renewal time", func() (bool, string) { return clk.Waiters() == 1, "" })
	clk.Step(7*time.Minute - time.Second) // 70% of the lifetime
	if n := s.requests(); n != 1 {
		t.Fatalf("%d requests before 70%% of the lifetime, want 1", n)
	}
	clk.Step(time.Second)
	csr := s.pending(2)
	if c := m.Current(); c == nil || c.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Error("the old certificate is not served while the new one is pending")
	}
	clk.Step(3 * time.Minute)
	if m.Current() != nil {
		t.Error("an expired certificate is served")
	}
	second := s.issue(csr)
	waitCurrent(t, m, second)
}

// A denied request is retried, with a new request, after a back-off.
func TestDeniedIsRetried(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	m := s.manager(t.TempDir(), addresses...)
	s.run(m)
	s.deny(s.pending(1))
	// Step the clock until the second request comes; steps taken before
	// the manager waits count too, so this only bounds from below.
	var stepped time.Duration
	polltest.Until(t, 10*time.Second, "a second request", func() (bool, string) {
		if s.requests() > 1 {
			return true, ""
		}
		clk.Step(100 * time.Millisecond)
		stepped += 100 * time.Millisecond
		return false, fmt.Sprintf("stepped %v", stepped)
	})
	if stepped < firstBackoff {
		t.Errorf("retried after %v, before the back-off of %v", stepped, firstBackoff)
	}
	waitCurrent(t, m, s.issue(s.pending(2)))
}

// A kept certificate that does not name the node's addresses (its IP
// changed) is served, and replaced at once.
func TestNewAddressRenewsAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSigner(t, clk)
	dir := t.TempDir()
	old := s.manager(dir, addresses...)
	s.run(old)
	first := s.issue(s.pending(1))
	waitCurrent(t, old, first)

	moved := s.manager(dir, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "10.0.0.8"}, v1.NodeAddress{Type: v1.NodeHostName, Address: "n1"})
	if c := moved.Current(); c == nil || c.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("the kept certificate is not served while a new one is requested")
	}
	s.run(moved)
	second := s.issue(s.pending(2))
	if !second.IPAddresses[0].Equal(net.ParseIP("10.0.0.8")) {
		t.Errorf("new certificate for %v, want 10.0.0.8", second.IPAddresses)
	}
	waitCurrent(t, moved, second)
}
