package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// TestServingCertificateBootstrap: with --rotate-server-certificates the
// agent asks the apiserver for its serving certificate with a
// kubernetes.io/kubelet-serving CSR for system:node:<node>; handshakes fail
// until it is issued; once the test, acting as an approver and the
// signer (no controller-manager runs here), approves and signs it, the
// kubelet port serves it and keeps it under --cert-dir.
func TestServingCertificateBootstrap(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	srv := env.api.get(t)
	n := startNodeAgent(t, env.runtimes[0], srv, "--client-ca-file", srv.ClientCAFile(), "--rotate-server-certificates")
	a := n.a
	user := "system:node:" + a.node

	var csr *certificatesv1.CertificateSigningRequest
	polltest.Until(t, 30*time.Second, "a kubelet-serving CSR for "+user, func() (bool, string) {
		list, err := n.client.CertificatesV1().CertificateSigningRequests().List(n.ctx(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			c := &list.Items[i]
			if req, err := parseCSR(c.Spec.Request); err == nil && req.Subject.CommonName == user && c.Spec.SignerName == certificatesv1.KubeletServingSignerName {
				csr = c
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d CSRs, none for %s", len(list.Items), user)
	})
	req, err := parseCSR(csr.Spec.Request)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "system:nodes" || !hasUsage(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		t.Errorf("CSR subject %v usages %v: want organization system:nodes and server auth", req.Subject, csr.Spec.Usages)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", a.kubeletPort)
	caCert, caKey := testCA(t)
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	dial := func() (*x509.Certificate, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: a.node, MinVersion: tls.VersionTLS12})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	if _, err := dial(); err == nil {
		t.Errorf("handshake before the certificate is issued succeeded")
	}

	// Approve, then sign as the signer would.
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "E2E", Message: "approved by the test",
	})
	csr, err = n.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(n.ctx(), csr.Name, csr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, req.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := n.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(n.ctx(), csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	polltest.Until(t, 30*time.Second, "the issued certificate served", func() (bool, string) {
		cert, err := dial()
		if err != nil {
			return false, err.Error()
		}
		return cert.Subject.CommonName == user, "served " + cert.Subject.CommonName
	})
	if _, err := os.Stat(filepath.Join(a.dir, "root", "pki", "kubelet-server-current.pem")); err != nil {
		t.Errorf("the issued certificate is not kept: %v", err)
	}
}

func parseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

func hasUsage(usages []certificatesv1.KeyUsage, u certificatesv1.KeyUsage) bool {
	for _, got := range usages {
		if got == u {
			return true
		}
	}
	return false
}

// testCA makes a CA that signs what the test issues.
func testCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "e2e-kubelet-serving-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
