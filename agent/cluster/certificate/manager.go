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
)

// Kind says which of the node's certificates a Manager keeps.
type Kind int

const (
	// Serving is the kubelet port's serving certificate: signer
	// kubernetes.io/kubelet-serving, the node's addresses as subject
	// alternative names, kept as kubelet-server-*.pem.
	Serving Kind = iota
	// Client is the node's client certificate towards the apiserver:
	// signer kubernetes.io/kube-apiserver-client-kubelet, kept as
	// kubelet-client-*.pem.
	Client
)

// profile is what a Kind's requests and files look like, as the kubelet
// makes them.
type profile struct {
	// noun names the certificate in log lines and errors.
	noun   string
	prefix string
	signer string
	// usages omit key encipherment: the key is ECDSA.
	usages []certificatesv1.KeyUsage
	// sans says whether the node's addresses go in the request.
	sans bool
}

func (k Kind) profile() profile {
	if k == Client {
		return profile{noun: "client certificate", prefix: "kubelet-client", signer: certificatesv1.KubeAPIServerClientKubeletSignerName,
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}
	}
	return profile{noun: "serving certificate", prefix: "kubelet-server", signer: certificatesv1.KubeletServingSignerName,
		usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, sans: true}
}

// CurrentFile is where the serving certificate in use and its key are
// kept, the kubelet's name; ClientCurrentFile the client certificate's.
// Each is a link to a dated file beside it.
const (
	CurrentFile       = "kubelet-server-current.pem"
	ClientCurrentFile = "kubelet-client-current.pem"
)

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

// Config configures a Manager. NodeName, Dir and Clock are required.
type Config struct {
	Kind Kind
	// NodeName names the certificate's subject, system:node:<NodeName> in
	// organization system:nodes.
	NodeName string
	// Addresses are the node's (Serving only): its IP addresses and DNS
	// names (Hostname, InternalDNS, ExternalDNS) become the certificate's
	// SANs.
	Addresses []v1.NodeAddress
	// Dir keeps the certificates (see store); it is made (mode 0700) when
	// missing.
	Dir string
	// Initial is the certificate to use when Dir holds no usable one (a
	// client certificate named by --kubeconfig); nil for none. It is not
	// copied to Dir.
	Initial *tls.Certificate
	// Bootstrap, when set, requests certificates while the Manager holds
	// no valid one (none yet, or expired): the bootstrap kubeconfig's
	// credentials. Otherwise every request goes through the client Run is
	// given.
	Bootstrap csrClient
	// Rotate requests the next certificate at a random point between 70%
	// and 90% of the current one's lifetime. Without it, a certificate is
	// requested only when there is none, it has expired, or it does not
	// fit the node.
	Rotate bool
	Clock  clock.WithTicker
}

// Manager keeps one of the node's certificates. Current, Ready and
// RESTConfig may be called from any goroutine; Run once.
type Manager struct {
	cfg   Config
	kind  profile
	store store
	// jitter returns a number in [0, 1) that places the renewal between
	// 70% and 90% of the lifetime.
	jitter func() float64
	// conns tracks the connections of the clients RESTConfig made; those
	// dialled before a new certificate are closed once it is current.
	conns *connTracker
	// ready is closed once the Manager holds a certificate, by New or by
	// Run (under mu, readyOnce).
	ready     chan struct{}
	readyOnce sync.Once

	mu sync.Mutex
	// cert is the certificate in use, nil before one is issued; guarded
	// by mu.
	cert *tls.Certificate
}

// New returns a Manager holding the certificate kept in cfg.Dir if there
// is a valid one, else cfg.Initial; it contacts no apiserver.
func New(cfg Config) *Manager {
	m := &Manager{cfg: cfg, kind: cfg.Kind.profile(), jitter: mathrand.Float64, conns: newConnTracker(), ready: make(chan struct{})}
	m.store = store{dir: cfg.Dir, prefix: m.kind.prefix}
	if cert, err := m.store.load(); err == nil && m.valid(cert) {
		m.cert = cert
	} else if cfg.Initial != nil && m.valid(cfg.Initial) {
		m.cert = cfg.Initial
	}
	if m.cert != nil {
		m.readyOnce.Do(func() { close(m.ready) })
	}
	return m
}

// valid says whether cert has a parsed leaf that has not expired.
func (m *Manager) valid(cert *tls.Certificate) bool {
	return cert != nil && cert.Leaf != nil && m.cfg.Clock.Now().Before(cert.Leaf.NotAfter)
}

// CurrentPath is the file that holds the certificate Dir keeps (a link
// to the newest dated file), whether or not it exists yet.
func (m *Manager) CurrentPath() string { return m.store.current() }

// Current returns the certificate to use: nil before one is issued, and
// once it has expired.
func (m *Manager) Current() *tls.Certificate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.valid(m.cert) {
		return nil
	}
	return m.cert
}

// Ready is closed once the Manager holds a certificate (which may have
// expired since).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Run requests certificates as they are needed until ctx is done. client
// is the node's own: it makes every request while the Manager holds a
// valid certificate, and every request when there is no Config.Bootstrap.
func (m *Manager) Run(ctx context.Context, client csrClient) {
	logger := klog.FromContext(ctx).WithName(m.kind.prefix)
	ctx = klog.NewContext(ctx, logger)
	if _, err := m.store.load(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.Info("The kept certificate is not usable; requesting a new one", "kind", m.kind.noun, "err", err)
	}
	backoff := firstBackoff
	for {
		if !m.waitForRenewal(ctx) {
			return
		}
		with, credentials := client, "the node's"
		if m.cfg.Bootstrap != nil && m.Current() == nil {
			with, credentials = m.cfg.Bootstrap, "the bootstrap"
		}
		cert, err := m.request(ctx, with, credentials)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			logger.Error(err, "Requesting a certificate failed; will retry", "kind", m.kind.noun, "credentials", credentials, "retryIn", backoff)
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
		// Open connections keep the certificate they were made with:
		// close them, so that every request and watch from now on
		// authenticates with the new one. Before ready: the requests
		// waiting for a first certificate dial in the new generation.
		m.conns.rotate()
		m.readyOnce.Do(func() { close(m.ready) })
		logger.Info("Certificate issued", "kind", m.kind.noun, "serial", cert.Leaf.SerialNumber.Text(16), "notAfter", cert.Leaf.NotAfter, "dnsNames", cert.Leaf.DNSNames, "ips", cert.Leaf.IPAddresses)
		if m.cfg.Kind == Client {
			logger.Info("Closed the connections to the apiserver; requests and watches come back with the new certificate")
		}
	}
}

// waitForRenewal waits until a certificate is due (at once when there is
// none, or it does not fit the node); false when ctx ended.
func (m *Manager) waitForRenewal(ctx context.Context) bool {
	m.mu.Lock()
	cert := m.cert
	m.mu.Unlock()
	if !m.valid(cert) || !m.fits(cert.Leaf) {
		return ctx.Err() == nil
	}
	at := m.renewalTime(cert.Leaf)
	wait := at.Sub(m.cfg.Clock.Now())
	if wait <= 0 {
		return ctx.Err() == nil
	}
	klog.FromContext(ctx).V(2).Info("Certificate renewal scheduled", "kind", m.kind.noun, "at", at)
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

// renewalTime is when a certificate is renewed: with Rotate, at a random
// point between 70% and 90% of its lifetime, as the kubelet's; without,
// when it expires.
func (m *Manager) renewalTime(c *x509.Certificate) time.Time {
	if !m.cfg.Rotate {
		return c.NotAfter
	}
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
	for _, org := range tmpl.Subject.Organization {
		if !slices.Contains(c.Subject.Organization, org) {
			return false
		}
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
	if !m.kind.sans {
		return tmpl
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

// request makes a key and a CSR with client, waits for the certificate and
// keeps both.
func (m *Manager) request(ctx context.Context, client csrClient, credentials string) (*tls.Certificate, error) {
	tmpl := m.template()
	if m.kind.sans && len(tmpl.IPAddresses) == 0 {
		return nil, fmt.Errorf("node %s has no IP address to put in a serving certificate", m.cfg.NodeName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	csr, err := client.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: m.kind.signer,
			Usages:     m.kind.usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create CertificateSigningRequest with %s credentials: %w", credentials, err)
	}
	klog.FromContext(ctx).Info("Requested a certificate; waiting for the CertificateSigningRequest to be approved and issued", "kind", m.kind.noun, "csr", csr.Name, "signer", m.kind.signer, "credentials", credentials)
	certPEM, err := m.waitIssued(ctx, client, csr.Name)
	if err != nil {
		return nil, fmt.Errorf("CertificateSigningRequest %s: %w", csr.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	pair := append(append([]byte(nil), certPEM...), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	cert, err := tls.X509KeyPair(pair, pair)
	if err != nil {
		return nil, fmt.Errorf("CertificateSigningRequest %s: the issued certificate: %w", csr.Name, err)
	}
	if err := m.store.save(m.cfg.Clock.Now(), pair); err != nil {
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
func (m *Manager) waitIssued(ctx context.Context, client csrClient, name string) ([]byte, error) {
	timer := m.cfg.Clock.NewTimer(issueTimeout)
	defer timer.Stop()
	timeout := timer.C()
	for {
		csr, err := client.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if cert, done, err := issued(csr); done {
				return cert, err
			}
			cert, done, err := watchIssued(ctx, client, name, csr.ResourceVersion, timeout)
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
func watchIssued(ctx context.Context, client csrClient, name, resourceVersion string, timeout <-chan time.Time) ([]byte, bool, error) {
	w, err := client.Watch(ctx, metav1.ListOptions{
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
