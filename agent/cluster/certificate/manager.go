package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/atomicfile"
)

// CurrentFile is where the certificate and its key are kept, the
// kubelet's name.
const CurrentFile = "kubelet-server-current.pem"

// Timing: how long one request may wait for its certificate, and the
// back-off between failed requests.
const (
	issueTimeout   = 15 * time.Minute
	firstBackoff   = 2 * time.Second
	maxBackoff     = 5 * time.Minute
	rewatchBackoff = time.Second
)

// csrClient is what the Manager calls of the apiserver's
// CertificateSigningRequests
// (k8s.io/client-go/kubernetes/typed/certificates/v1).
type csrClient interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Config configures a Manager. Every field is required.
type Config struct {
	Client csrClient
	// NodeName names the certificate's subject, system:node:<NodeName>.
	NodeName string
	// Addresses are the node's: its IP addresses and DNS names (Hostname,
	// InternalDNS, ExternalDNS) become the certificate's SANs.
	Addresses []v1.NodeAddress
	// Dir keeps CurrentFile; it is made (mode 0700) when missing.
	Dir   string
	Clock clock.WithTicker
}

// Manager keeps the serving certificate. Current may be called from any
// goroutine; Run once.
type Manager struct {
	cfg Config
	// jitter returns a number in [0, 1) that places the renewal between
	// 70% and 90% of the lifetime.
	jitter func() float64

	mu sync.Mutex
	// cert is the certificate in use, nil before one is issued; guarded
	// by mu.
	cert *tls.Certificate
}

// New returns a Manager holding the certificate kept in cfg.Dir, if there
// is a usable one; it contacts no apiserver.
func New(cfg Config) *Manager {
	m := &Manager{cfg: cfg, jitter: mathrand.Float64}
	if cert, err := m.load(); err == nil {
		m.cert = cert
	}
	return m
}

func (m *Manager) path() string { return filepath.Join(m.cfg.Dir, CurrentFile) }

// load reads the kept certificate.
func (m *Manager) load() (*tls.Certificate, error) {
	data, err := os.ReadFile(m.path())
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.path(), err)
	}
	return &cert, nil
}

// Current returns the certificate to serve: nil before one is issued, and
// once it has expired.
func (m *Manager) Current() *tls.Certificate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cert == nil || !m.cfg.Clock.Now().Before(m.cert.Leaf.NotAfter) {
		return nil
	}
	return m.cert
}

// Run requests certificates as they are needed until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("servingcert")
	ctx = klog.NewContext(ctx, logger)
	if _, err := m.load(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.Info("The kept serving certificate is not usable; requesting a new one", "err", err)
	}
	backoff := firstBackoff
	for {
		if !m.waitForRenewal(ctx) {
			return
		}
		cert, err := m.request(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			logger.Error(err, "Requesting a serving certificate failed; will retry", "retryIn", backoff)
			if !m.sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = firstBackoff
		m.mu.Lock()
		m.cert = cert
		m.mu.Unlock()
		logger.Info("Serving certificate issued", "notAfter", cert.Leaf.NotAfter, "dnsNames", cert.Leaf.DNSNames, "ips", cert.Leaf.IPAddresses)
	}
}

// waitForRenewal waits until the certificate is due for renewal (at once
// when there is none, or it does not fit the node); false when ctx ended.
func (m *Manager) waitForRenewal(ctx context.Context) bool {
	m.mu.Lock()
	cert := m.cert
	m.mu.Unlock()
	if cert == nil || !m.fits(cert.Leaf) {
		return ctx.Err() == nil
	}
	wait := m.renewalTime(cert.Leaf).Sub(m.cfg.Clock.Now())
	if wait <= 0 {
		return ctx.Err() == nil
	}
	klog.FromContext(ctx).V(2).Info("Serving certificate renewal scheduled", "at", m.renewalTime(cert.Leaf))
	return m.sleep(ctx, wait)
}

// sleep waits d on the clock; false when ctx ended first.
func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	t := m.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// renewalTime is when a certificate is renewed: at a random point between
// 70% and 90% of its lifetime, as the kubelet's.
func (m *Manager) renewalTime(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(time.Duration(float64(life) * (0.7 + 0.2*m.jitter())))
}

// fits reports whether c is the node's: its subject and every address the
// node has now.
func (m *Manager) fits(c *x509.Certificate) bool {
	tmpl := m.template()
	if c.Subject.CommonName != tmpl.Subject.CommonName {
		return false
	}
	for _, name := range tmpl.DNSNames {
		if !slices.Contains(c.DNSNames, name) {
			return false
		}
	}
	for _, ip := range tmpl.IPAddresses {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// template is the certificate request for the node, as the kubelet makes
// it.
func (m *Manager) template() *x509.CertificateRequest {
	tmpl := &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + m.cfg.NodeName, Organization: []string{"system:nodes"}},
	}
	for _, a := range m.cfg.Addresses {
		ip := net.ParseIP(a.Address)
		switch {
		case a.Address == "":
		case ip != nil && (a.Type == v1.NodeHostName || a.Type == v1.NodeInternalIP || a.Type == v1.NodeExternalIP):
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		case ip == nil && (a.Type == v1.NodeHostName || a.Type == v1.NodeInternalDNS || a.Type == v1.NodeExternalDNS):
			if !slices.Contains(tmpl.DNSNames, a.Address) {
				tmpl.DNSNames = append(tmpl.DNSNames, a.Address)
			}
		}
	}
	return tmpl
}

// request makes a key and a CSR, waits for the certificate and keeps both.
func (m *Manager) request(ctx context.Context) (*tls.Certificate, error) {
	tmpl := m.template()
	if len(tmpl.IPAddresses) == 0 {
		return nil, fmt.Errorf("node %s has no IP address to put in a serving certificate", m.cfg.NodeName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("serving key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	csr, err := m.cfg.Client.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			// No key encipherment: the key is ECDSA.
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create CertificateSigningRequest: %w", err)
	}
	klog.FromContext(ctx).Info("Requested a serving certificate; waiting for the CertificateSigningRequest to be approved and issued", "csr", csr.Name)
	certPEM, err := m.waitIssued(ctx, csr.Name)
	if err != nil {
		return nil, fmt.Errorf("CertificateSigningRequest %s: %w", csr.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("serving key: %w", err)
	}
	pair := append(append([]byte(nil), certPEM...), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	cert, err := tls.X509KeyPair(pair, pair)
	if err != nil {
		return nil, fmt.Errorf("CertificateSigningRequest %s: the issued certificate: %w", csr.Name, err)
	}
	if err := os.MkdirAll(m.cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	if err := atomicfile.WriteFile(m.path(), pair, 0o600); err != nil {
		return nil, err
	}
	return &cert, nil
}

// errTimeout is a request not issued within issueTimeout.
var errTimeout = errors.New("not issued within 15 minutes (approve it with kubectl certificate approve)")

// waitIssued waits until the CSR name is issued, and returns its
// certificate; an error when it is denied or failed, or not issued within
// issueTimeout. It watches the one CSR, from a Get, again after each break
// of the watch.
func (m *Manager) waitIssued(ctx context.Context, name string) ([]byte, error) {
	timer := m.cfg.Clock.NewTimer(issueTimeout)
	defer timer.Stop()
	timeout := timer.C()
	for {
		csr, err := m.cfg.Client.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if cert, done, err := issued(csr); done {
				return cert, err
			}
			cert, done, err := m.watchIssued(ctx, name, csr.ResourceVersion, timeout)
			if done {
				return cert, err
			}
		} else {
			klog.FromContext(ctx).V(2).Info("Reading the CertificateSigningRequest failed; will retry", "csr", name, "err", err)
		}
		if !m.sleep(ctx, rewatchBackoff) {
			return nil, ctx.Err()
		}
	}
}

// watchIssued watches CSR name from resourceVersion until it is issued,
// denied or failed (done), or the watch breaks (not done).
func (m *Manager) watchIssued(ctx context.Context, name, resourceVersion string, timeout <-chan time.Time) ([]byte, bool, error) {
	w, err := m.cfg.Client.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: resourceVersion,
	})
	if err != nil {
		return nil, false, nil
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case <-timeout:
			return nil, true, errTimeout
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			csr, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest)
			switch {
			case ev.Type == watch.Deleted && isCSR && csr.Name == name:
				return nil, true, errors.New("deleted before it was issued")
			case !isCSR || csr.Name != name:
			default:
				if cert, done, err := issued(csr); done {
					return cert, true, err
				}
			}
		}
	}
}

// issued says whether csr is done: issued (its certificate), denied or
// failed (an error naming the reason).
func issued(csr *certificatesv1.CertificateSigningRequest) ([]byte, bool, error) {
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return nil, true, fmt.Errorf("%s: %s %s", c.Type, c.Reason, c.Message)
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}
