package server

import (
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
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/atomicfile"
)

// TLS is where the kubelet port's serving certificate comes from, in the
// kubelet's order: a rotating certificate issued through the apiserver
// (serverTLSBootstrap), else the given files, else a self-signed one kept
// in CertDir.
type TLS struct {
	// Rotating, when set, returns the current certificate, nil until one
	// is issued: handshakes fail until then, as the kubelet's do.
	Rotating func() *tls.Certificate
	// CertFile and KeyFile are --tls-cert-file and --tls-private-key-file.
	CertFile, KeyFile string
	// CertDir keeps the self-signed certificate (kubelet.crt, kubelet.key)
	// made when neither of the above is given (--cert-dir).
	CertDir string
	// Hosts are the self-signed certificate's DNS names and IP addresses.
	Hosts []string
}

// Self-signed certificate files in CertDir, the kubelet's names.
const (
	selfSignedCert = "kubelet.crt"
	selfSignedKey  = "kubelet.key"
)

// selfSignedLifetime is how long a self-signed certificate is valid, as
// the kubelet's.
const selfSignedLifetime = 365 * 24 * time.Hour

// certificateSource returns what gives the serving certificate: it loads
// the files, or the self-signed certificate (made and written when
// missing or expired).
func (t TLS) certificateSource(logger klog.Logger, clk clock.PassiveClock) (func() *tls.Certificate, error) {
	if t.Rotating != nil {
		return t.Rotating, nil
	}
	var cert *tls.Certificate
	var err error
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err = loadCertificate(t.CertFile, t.KeyFile)
	} else {
		cert, err = selfSigned(logger, t.CertDir, t.Hosts, clk)
	}
	if err != nil {
		return nil, err
	}
	return func() *tls.Certificate { return cert }, nil
}

func loadCertificate(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// selfSigned returns the self-signed certificate of dir, which it makes
// for hosts when there is none, or the one there has expired. A restart
// keeps the same certificate, so clients that pinned it keep working.
func selfSigned(logger klog.Logger, dir string, hosts []string, clk clock.PassiveClock) (*tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, selfSignedCert), filepath.Join(dir, selfSignedKey)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	switch {
	case err == nil && clk.Now().Before(cert.Leaf.NotAfter):
		return &cert, nil
	case err == nil:
		logger.Info("The self-signed serving certificate has expired; making a new one", "cert", certPath, "notAfter", cert.Leaf.NotAfter)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("self-signed serving certificate %s, %s: %w (remove both to have new ones made)", certPath, keyPath, err)
	}
	certPEM, keyPEM, err := makeSelfSigned(hosts, clk.Now())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	// The key first: a certificate without its key is never left behind
	// as if it were usable.
	if err := atomicfile.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	logger.Info("Made a self-signed serving certificate", "cert", certPath, "hosts", hosts)
	return &cert, nil
}

// makeSelfSigned makes a self-signed serving certificate for hosts (DNS
// names and IP addresses) valid from an hour before now (clock skew) for
// selfSignedLifetime, with an ECDSA P-256 key.
func makeSelfSigned(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed serving key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed serving certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", first(hosts), now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(-time.Hour).Add(selfSignedLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed serving key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func first(s []string) string {
	if len(s) == 0 {
		return "minikubelet"
	}
	return s[0]
}

// tlsConfig is the kubelet port's TLS configuration: the certificate that
// current returns at each handshake, client certificates asked for but
// checked by authentication (a request without one may still bring a
// token), and HTTP/1.1 only, whose upgrades the streaming endpoints use.
func tlsConfig(current func() *tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequestClientCert,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := current(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate available for the kubelet")
		},
	}
}
